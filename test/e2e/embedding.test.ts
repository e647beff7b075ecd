import { describe, expect, it } from 'vitest'
import type { SupervisionEvent } from '../../src/actors/kernel'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { verifyEventNoble } from '../../src/protocols/nip01/event'
import { client, idsOf, reqEvents } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'

describe('embedding the relay in a program', () => {
  const relays = useRelays()

  it('publishes with relay.publish, signed by relay.pubkey, to live subscribers and to storage', async () => {
    const r = await relays.start()
    const c = await client(r)
    await reqEvents(c, [{ authors: [r.relay.pubkey] }], 'from-relay')
    const outcome = await r.relay.publish('default', { kind: 1, content: 'hello from the host program' })
    expect(outcome).toEqual({ accepted: true, message: '' })
    const f = await c.next((x) => x[0] === 'EVENT' && x[1] === 'from-relay')
    const e = f[2] as NostrEvent
    expect(e.pubkey).toBe(r.relay.pubkey)
    expect(e.content).toBe('hello from the host program')
    expect(verifyEventNoble(e)).toBe('ok')
    expect(idsOf(await reqEvents(await client(r), [{ authors: [r.relay.pubkey] }]))).toEqual([e.id])
  })

  it('publishes into the named community only', async () => {
    const r = await relays.start({ communities: [{ id: 'beta', hosts: ['beta.test'] }] })
    await r.relay.publish('beta', { kind: 1, content: 'beta only' })
    expect(await reqEvents(await client(r), [{ authors: [r.relay.pubkey] }])).toEqual([])
    expect(await reqEvents(await client(r, 'beta.test'), [{ authors: [r.relay.pubkey] }])).toHaveLength(1)
    await expect(r.relay.publish('nowhere', { kind: 1, content: 'x' })).rejects.toThrow()
  })

  it('reports open subscriptions and connections in relay.stats', async () => {
    const r = await relays.start()
    const c = await client(r)
    await reqEvents(c, [{ kinds: [1] }], 'a')
    await reqEvents(c, [{ kinds: [7] }], 'b')
    expect(await r.relay.stats('default')).toMatchObject({ id: 'default', subscriptions: 2, connections: 1 })
    c.send(['CLOSE', 'a'])
    await reqEvents(c, [{ kinds: [1] }], 'a2')
    c.send(['CLOSE', 'a2'])
    await reqEvents(c, [{ kinds: [9] }], 'c')
    expect((await r.relay.stats('default')).subscriptions).toBe(2)
  })

  it('emits "started" on supervision$ for each connection actor', async () => {
    const r = await relays.start()
    const events: SupervisionEvent[] = []
    const sub = r.relay.supervision$.subscribe((e) => events.push(e))
    await client(r)
    await client(r)
    sub.unsubscribe()
    const started = events.filter((e) => e.type === 'started' && e.kind === 'connection')
    expect(started).toHaveLength(2)
  })

  it('exposes the effective config', async () => {
    const r = await relays.start({ limits: { maxFilters: 3 } })
    expect(r.relay.config.limits.maxFilters).toBe(3)
    expect(r.relay.url).toBe(r.url)
  })
})
