import type { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createMemoryPresenceStore } from '../../../src/infra/gates/memory-presence'
import { createRedisPresenceStore } from '../../../src/infra/gates/redis-presence'
import { presenceConnKey, presenceKey } from '../../../src/infra/redis/keys'
import { connectRedis, hex64, testCommunity } from '../redis/connect'
import { describePresenceContract } from './presence.contract'

let redis: Redis
let nodeB: Redis
beforeAll(async () => {
  redis = await connectRedis()
  nodeB = await connectRedis()
})
afterAll(() => {
  redis.disconnect()
  nodeB.disconnect()
})

describePresenceContract('memory', () => createMemoryPresenceStore())
describePresenceContract('redis', () => createRedisPresenceStore({ redis }))

describe('redis presence store', () => {
  it('stores each status under the presence key with the TTL asked, rounded up to whole seconds', async () => {
    const [c, alice] = [testCommunity(), hex64()]
    await createRedisPresenceStore({ redis }).set(c, alice, 'online', 29.2)
    const key = presenceKey(c, alice)
    expect(await redis.get(key)).toBe('online')
    const pttl = await redis.pttl(key)
    expect(pttl).toBeGreaterThan(28_000)
    expect(pttl).toBeLessThanOrEqual(30_000)
    await redis.del(key)
  })

  it('gives the connection count an expiry that each heartbeat refreshes, so a crashed node pins nobody', async () => {
    const store = createRedisPresenceStore({ redis })
    const [c, alice] = [testCommunity(), hex64()]
    await store.connect(c, alice, 5)
    const key = presenceConnKey(c, alice)
    expect(await redis.get(key)).toBe('1')
    expect(await redis.pttl(key)).toBeLessThanOrEqual(5_000)
    await store.set(c, alice, 'online', 90)
    expect(await redis.pttl(key)).toBeGreaterThan(80_000)
    await store.disconnect(c, alice)
    expect(await redis.exists(key, presenceKey(c, alice))).toBe(0)
  })

  it('counts connections across nodes: a close on one node keeps a presence another node still holds', async () => {
    const [a, b] = [createRedisPresenceStore({ redis }), createRedisPresenceStore({ redis: nodeB })]
    const [c, alice] = [testCommunity(), hex64()]
    await a.connect(c, alice, 30)
    await b.connect(c, alice, 30)
    await a.set(c, alice, 'online', 30)
    expect(await a.disconnect(c, alice)).toBe(1)
    expect(await b.get(c, [alice])).toEqual(new Map([[alice, 'online']]))
    expect(await b.disconnect(c, alice)).toBe(0)
    expect(await a.get(c, [alice])).toEqual(new Map())
  })

  it('shows a status set on one node to another node, and a clear on either to both', async () => {
    const [a, b] = [createRedisPresenceStore({ redis }), createRedisPresenceStore({ redis: nodeB })]
    const [c, alice] = [testCommunity(), hex64()]
    await a.set(c, alice, 'online', 30)
    expect(await b.get(c, [alice])).toEqual(new Map([[alice, 'online']]))
    await b.clear(c, alice)
    expect(await a.get(c, [alice])).toEqual(new Map())
  })
})

describe('memory presence store', () => {
  it('holds at most maxEntries pubkeys, dropping the least recently refreshed', async () => {
    const store = createMemoryPresenceStore({ now: () => 0, maxEntries: 50 })
    const c = testCommunity()
    const pubkeys = Array.from({ length: 500 }, hex64)
    for (const p of pubkeys) {
      await store.set(c, p, 'online', 60)
      expect(store.size).toBeLessThanOrEqual(50)
    }
    expect((await store.get(c, pubkeys)).size).toBe(50)
    expect((await store.get(c, pubkeys.slice(-50))).size).toBe(50)
  })

  it('counts a refresh as recent: at maxEntries a new pubkey drops the one refreshed longest ago, a refresh drops none', async () => {
    const store = createMemoryPresenceStore({ now: () => 0, maxEntries: 2 })
    const c = testCommunity()
    const [a, b, d] = [hex64(), hex64(), hex64()]
    await store.set(c, a, 'online', 60)
    await store.set(c, b, 'online', 60)
    await store.set(c, a, 'away', 60)
    expect(await store.get(c, [a, b])).toEqual(
      new Map([
        [a, 'away'],
        [b, 'online'],
      ]),
    )
    await store.set(c, d, 'online', 60)
    expect(await store.get(c, [a, b, d])).toEqual(
      new Map([
        [a, 'away'],
        [d, 'online'],
      ]),
    )
  })

  it('shrinks to the live entries under churn', async () => {
    const clock = { t: 0 }
    const store = createMemoryPresenceStore({ now: () => clock.t })
    for (let i = 0; i < 1000; i++) {
      clock.t = i * 1000
      await store.set(testCommunity(), hex64(), 'online', 30)
    }
    expect(store.size).toBeLessThanOrEqual(32)
  })
})
