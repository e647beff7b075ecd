import { describe, expect, it } from 'vitest'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { makeKeys, type SignedEvent, signEvent } from '../support/events'
import { client, idsOf, nowSeconds, publish, publishNew, reqEvents } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'

/** NIP-01 order: created_at desc, ties by lowest id. */
const newestFirst = (a: NostrEvent, b: NostrEvent) => b.created_at - a.created_at || (a.id < b.id ? -1 : 1)

describe('reading events with REQ (NIP-01)', () => {
  const relays = useRelays()

  it('returns stored events newest first, ties broken by lowest id, then EOSE', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = makeKeys()
    const t = nowSeconds()
    const sent: SignedEvent[] = []
    for (const [i, created_at] of [t - 30, t - 10, t - 10, t - 10, t - 20, t].entries()) {
      sent.push(await publishNew(c, keys, { created_at, content: `n${i}` }))
    }
    const got = await reqEvents(c, [{ authors: [keys.pubkey] }])
    expect(idsOf(got)).toEqual(idsOf(sent.map((s) => s.event).sort(newestFirst)))
  })

  it('sends EOSE after the stored events and live events after EOSE', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = makeKeys()
    const stored = await publishNew(c, keys, { content: 'stored' })
    c.send(['REQ', 'mix', { authors: [keys.pubkey] }])
    await c.next((f) => f[0] === 'EOSE' && f[1] === 'mix')
    const live = await publishNew(await client(r), keys, { content: 'live' })
    await c.next((f) => f[0] === 'EVENT' && f[1] === 'mix' && (f[2] as NostrEvent).id === live.event.id)
    const order = c.frames.filter((f) => f[1] === 'mix').map((f) => (f[0] === 'EOSE' ? 'EOSE' : (f[2] as NostrEvent).id))
    expect(order).toEqual([stored.event.id, 'EOSE', live.event.id])
  })

  it('answers an event matching any of several filters (OR), once', async () => {
    const r = await relays.start()
    const c = await client(r)
    const a = makeKeys()
    const b = makeKeys()
    const ea = await publishNew(c, a, { kind: 1 })
    const eb = await publishNew(c, b, { kind: 7 })
    await publishNew(c, b, { kind: 1 }) // matches neither filter
    const got = await reqEvents(c, [{ authors: [a.pubkey] }, { authors: [b.pubkey], kinds: [7] }, { ids: [ea.event.id] }])
    expect(idsOf(got).sort()).toEqual([ea.event.id, eb.event.id].sort())
  })

  it('clamps a limit above maxLimit to maxLimit instead of refusing the REQ', async () => {
    const r = await relays.start({ limits: { maxLimit: 3 } })
    const c = await client(r)
    const keys = makeKeys()
    const t = nowSeconds()
    const sent: SignedEvent[] = []
    for (let i = 0; i < 5; i++) sent.push(await publishNew(c, keys, { created_at: t - i }))
    const got = await reqEvents(c, [{ authors: [keys.pubkey], limit: 1000 }])
    expect(idsOf(got)).toEqual(idsOf(sent.slice(0, 3).map((s) => s.event)))
  })

  it('applies defaultLimit to a filter without a limit, keeping the newest', async () => {
    const r = await relays.start({ limits: { defaultLimit: 2 } })
    const c = await client(r)
    const keys = makeKeys()
    const t = nowSeconds()
    const sent: SignedEvent[] = []
    for (let i = 0; i < 4; i++) sent.push(await publishNew(c, keys, { created_at: t - i }))
    expect(idsOf(await reqEvents(c, [{ authors: [keys.pubkey] }]))).toEqual(idsOf(sent.slice(0, 2).map((s) => s.event)))
    // an explicit limit up to maxLimit overrides the default
    expect(await reqEvents(c, [{ authors: [keys.pubkey], limit: 4 }])).toHaveLength(4)
  })

  it('answers limit 0 with EOSE alone and still delivers live events', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = makeKeys()
    await publishNew(c, keys)
    expect(await reqEvents(c, [{ authors: [keys.pubkey], limit: 0 }], 'zero')).toEqual([])
    const live = await publishNew(await client(r), keys)
    const f = await c.next((x) => x[0] === 'EVENT' && x[1] === 'zero')
    expect((f[2] as NostrEvent).id).toBe(live.event.id)
  })

  it('stops live delivery after CLOSE', async () => {
    const r = await relays.start()
    const c = await client(r)
    const pub = await client(r)
    const keys = makeKeys()
    await reqEvents(c, [{ authors: [keys.pubkey] }], 'gone')
    c.send(['CLOSE', 'gone'])
    await reqEvents(c, [{ authors: [keys.pubkey] }], 'marker')
    const e = await publishNew(pub, keys)
    await c.next((f) => f[0] === 'EVENT' && f[1] === 'marker' && (f[2] as NostrEvent).id === e.event.id)
    expect(c.frames.filter((f) => f[0] === 'EVENT' && f[1] === 'gone')).toEqual([])
  })

  it('replaces a subscription when a REQ reuses its id', async () => {
    const r = await relays.start()
    const c = await client(r)
    const pub = await client(r)
    const a = makeKeys()
    const b = makeKeys()
    await reqEvents(c, [{ authors: [a.pubkey] }], 'same')
    await reqEvents(c, [{ authors: [b.pubkey] }], 'same')
    const fromA = await publishNew(pub, a)
    const fromB = await publishNew(pub, b)
    await c.next((f) => f[0] === 'EVENT' && f[1] === 'same' && (f[2] as NostrEvent).id === fromB.event.id)
    expect(c.frames.some((f) => f[0] === 'EVENT' && (f[2] as NostrEvent).id === fromA.event.id)).toBe(false)
  })

  it('matches #e, #p and #t tag filters, exact value only', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = makeKeys()
    const target = 'a'.repeat(64)
    const person = 'b'.repeat(64)
    const withE = await publishNew(c, keys, { tags: [['e', target]] })
    const withP = await publishNew(c, keys, { tags: [['p', person]] })
    const withT = await publishNew(c, keys, {
      tags: [
        ['t', 'nostr'],
        ['t', 'apiary'],
      ],
    })
    await publishNew(c, keys, { tags: [['t', 'nostrich']] })
    expect(idsOf(await reqEvents(c, [{ '#e': [target] }]))).toEqual([withE.event.id])
    expect(idsOf(await reqEvents(c, [{ '#p': [person] }]))).toEqual([withP.event.id])
    expect(idsOf(await reqEvents(c, [{ '#t': ['apiary'] }]))).toEqual([withT.event.id])
    // two tag conditions in one filter must both hold
    expect(await reqEvents(c, [{ '#t': ['nostr'], '#p': [person] }])).toEqual([])
  })

  it('treats since and until as inclusive bounds', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = makeKeys()
    const t = nowSeconds() - 100
    const at = async (created_at: number) => (await publishNew(c, keys, { created_at })).event.id
    const before = await at(t - 1)
    const first = await at(t)
    const middle = await at(t + 5)
    const last = await at(t + 10)
    const after = await at(t + 11)
    const got = await reqEvents(c, [{ authors: [keys.pubkey], since: t, until: t + 10 }])
    expect(idsOf(got)).toEqual([last, middle, first])
    expect(idsOf(got)).not.toContain(before)
    expect(idsOf(got)).not.toContain(after)
  })

  it('serves each REQ only events of its own filters when several are open', async () => {
    const r = await relays.start()
    const c = await client(r)
    const pub = await client(r)
    const a = makeKeys()
    const b = makeKeys()
    await reqEvents(c, [{ authors: [a.pubkey] }], 'for-a')
    await reqEvents(c, [{ authors: [b.pubkey] }], 'for-b')
    const ea = await publishNew(pub, a)
    const eb = await publishNew(pub, b)
    const fa = await c.next((f) => f[0] === 'EVENT' && f[1] === 'for-a')
    const fb = await c.next((f) => f[0] === 'EVENT' && f[1] === 'for-b')
    expect((fa[2] as NostrEvent).id).toBe(ea.event.id)
    expect((fb[2] as NostrEvent).id).toBe(eb.event.id)
  })

  it('answers COUNT with the number of matching events (NIP-45 shape)', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = makeKeys()
    for (let i = 0; i < 3; i++) await publishNew(c, keys)
    c.send(['COUNT', 'n', { authors: [keys.pubkey] }])
    const f = await c.next((x) => x[0] === 'COUNT' && x[1] === 'n')
    expect(f[2]).toEqual({ count: 3 })
  })

  it('does not deliver an event that matches no open subscription', async () => {
    const r = await relays.start()
    const c = await client(r)
    const pub = await client(r)
    const a = makeKeys()
    await reqEvents(c, [{ authors: [a.pubkey], kinds: [7] }], 'only7')
    const kind1 = signEvent(a, { kind: 1 })
    await publish(pub, kind1)
    const kind7 = await publishNew(pub, a, { kind: 7 })
    await c.next((f) => f[0] === 'EVENT' && f[1] === 'only7' && (f[2] as NostrEvent).id === kind7.event.id)
    expect(c.frames.filter((f) => f[0] === 'EVENT')).toHaveLength(1)
  })

  it('applies each filter’s own limit', async () => {
    const r = await relays.start()
    const c = await client(r)
    const a = makeKeys()
    const b = makeKeys()
    const t = nowSeconds()
    const newestA = await publishNew(c, a, { created_at: t })
    await publishNew(c, a, { created_at: t - 1 })
    const newestB = await publishNew(c, b, { created_at: t - 5 })
    await publishNew(c, b, { created_at: t - 6 })
    const got = await reqEvents(c, [
      { authors: [a.pubkey], limit: 1 },
      { authors: [b.pubkey], limit: 1 },
    ])
    expect(idsOf(got)).toEqual([newestA.event.id, newestB.event.id])
  })

  it('delivers live events matching a tag filter, checking every tag condition', async () => {
    const r = await relays.start()
    const c = await client(r)
    const pub = await client(r)
    const keys = makeKeys()
    const person = 'c'.repeat(64)
    await reqEvents(c, [{ '#t': ['live'], '#p': [person] }], 'tags')
    const onlyT = await publishNew(pub, keys, { tags: [['t', 'live']] })
    const both = await publishNew(pub, keys, {
      tags: [
        ['t', 'live'],
        ['p', person],
      ],
    })
    await c.next((f) => f[0] === 'EVENT' && f[1] === 'tags' && (f[2] as NostrEvent).id === both.event.id)
    expect(c.frames.some((f) => f[0] === 'EVENT' && (f[2] as NostrEvent).id === onlyT.event.id)).toBe(false)
  })

  it('closes the open subscription when a REQ reusing its id is refused with CLOSED', async () => {
    const r = await relays.start()
    const c = await client(r)
    const a = makeKeys()
    await reqEvents(c, [{ authors: [a.pubkey] }], 'reused')
    c.send(['REQ', 'reused', { kinds: ['not a kind'] }])
    const closed = await c.next((f) => f[0] === 'CLOSED' && f[1] === 'reused')
    expect(closed[2]).toMatch(/^invalid: /)
    await reqEvents(c, [{ authors: [a.pubkey] }], 'marker')
    const e = await publishNew(await client(r), a)
    await c.next((f) => f[0] === 'EVENT' && f[1] === 'marker' && (f[2] as NostrEvent).id === e.event.id)
    expect(c.frames.filter((f) => f[0] === 'EVENT' && f[1] === 'reused')).toEqual([])
    expect((await r.relay.stats('default')).subscriptions).toBe(1)
  })
})
