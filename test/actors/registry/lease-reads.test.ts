import { describe, expect, it } from 'vitest'
import { liveLeases } from '../../../src/actors/registry/lease-reads'
import { createMemoryPresenceStore } from '../../../src/infra/gates/memory-presence'

describe('the lease sweep read', () => {
  const pubkeys = Array.from({ length: 1_200 }, (_, i) => i.toString(16).padStart(64, '0'))

  it('finds exactly the pubkeys whose lease is live', async () => {
    let t = 0
    const store = createMemoryPresenceStore({ now: () => t })
    for (const [i, p] of pubkeys.entries()) await store.set('c', p, 'online', i % 3 === 0 ? 30 : 60)
    t = 45_000
    const live = await liveLeases(store, 'c', pubkeys)
    expect(live.size).toBe(pubkeys.filter((_, i) => i % 3 !== 0).length)
    expect(live.has(pubkeys[0]!)).toBe(false)
    expect(live.has(pubkeys[1]!)).toBe(true)
  })

  it('lets the event loop run between its reads, though the in-memory store answers at once', async () => {
    const store = createMemoryPresenceStore()
    for (const p of pubkeys) await store.set('c', p, 'online', 60)
    const order: string[] = []
    setImmediate(() => order.push('another turn'))
    await liveLeases(store, 'c', pubkeys).then(() => order.push('read done'))
    expect(order).toEqual(['another turn', 'read done'])
  })
})
