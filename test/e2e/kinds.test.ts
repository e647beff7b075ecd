import { describe, expect, it } from 'vitest'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { REASON_PREFIXES } from '../../src/protocols/reasons'
import { makeKeys, signEvent } from '../support/events'
import { client, fresh, idsOf, nowSeconds, publish, publishNew, reqEvents } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'

const standardPrefixes: readonly (string | undefined)[] = REASON_PREFIXES

describe('replaceable events (kinds 0, 3, 10000-19999)', () => {
  const relays = useRelays()

  for (const kind of [0, 3, 10002]) {
    it(`keeps only the newest kind ${kind} per author and refuses an older one arriving later`, async () => {
      const r = await relays.start()
      const c = await client(r)
      const keys = makeKeys()
      const t = nowSeconds()
      const older = await publishNew(c, keys, { kind, created_at: t - 20 })
      const newer = await publishNew(c, keys, { kind, created_at: t - 10 })
      expect(idsOf(await reqEvents(c, [{ authors: [keys.pubkey], kinds: [kind] }]))).toEqual([newer.event.id])
      const late = await publish(c, fresh(keys, { kind, created_at: t - 15 }))
      expect(late.accepted).toBe(false)
      expect(standardPrefixes).toContain(late.prefix)
      expect(idsOf(await reqEvents(c, [{ authors: [keys.pubkey], kinds: [kind] }]))).toEqual([newer.event.id])
      expect(await reqEvents(c, [{ ids: [older.event.id] }])).toEqual([])
    })
  }

  it('refuses the replaced version when it is sent again', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = makeKeys()
    const t = nowSeconds()
    const v1 = await publishNew(c, keys, { kind: 0, created_at: t - 20 })
    const v2 = await publishNew(c, keys, { kind: 0, created_at: t - 10 })
    const again = await publish(c, v1)
    expect(again.accepted).toBe(false)
    expect(standardPrefixes).toContain(again.prefix)
    expect(idsOf(await reqEvents(c, [{ authors: [keys.pubkey], kinds: [0] }]))).toEqual([v2.event.id])
  })

  it('keeps the lowest id when two versions share created_at, whichever arrives first', async () => {
    const r = await relays.start()
    const keys = makeKeys()
    const t = nowSeconds() - 5
    const [low, high] = [fresh(keys, { kind: 0, created_at: t }), fresh(keys, { kind: 0, created_at: t })].sort((a, b) =>
      a.event.id < b.event.id ? -1 : 1,
    )
    // high first: the lower id replaces it
    const c1 = await client(r)
    await publish(c1, high!)
    expect((await publish(c1, low!)).accepted).toBe(true)
    expect(idsOf(await reqEvents(c1, [{ authors: [keys.pubkey], kinds: [0] }]))).toEqual([low!.event.id])
    // low first: the higher id is refused
    const other = makeKeys()
    const [low2, high2] = [fresh(other, { kind: 0, created_at: t }), fresh(other, { kind: 0, created_at: t })].sort((a, b) =>
      a.event.id < b.event.id ? -1 : 1,
    )
    await publish(c1, low2!)
    const refused = await publish(c1, high2!)
    expect(refused.accepted).toBe(false)
    expect(standardPrefixes).toContain(refused.prefix)
    expect(idsOf(await reqEvents(c1, [{ authors: [other.pubkey], kinds: [0] }]))).toEqual([low2!.event.id])
  })

  it('keeps one replaceable event per author: another author’s version does not replace it', async () => {
    const r = await relays.start()
    const c = await client(r)
    const a = makeKeys()
    const b = makeKeys()
    const ea = await publishNew(c, a, { kind: 3, created_at: nowSeconds() - 10 })
    const eb = await publishNew(c, b, { kind: 3 })
    expect(idsOf(await reqEvents(c, [{ kinds: [3], authors: [a.pubkey, b.pubkey] }])).sort()).toEqual([ea.event.id, eb.event.id].sort())
  })
})

describe('addressable events (kinds 30000-39999)', () => {
  const relays = useRelays()

  it('keeps the newest per d tag, versions of other d tags untouched', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = makeKeys()
    const t = nowSeconds()
    await publishNew(c, keys, { kind: 30023, created_at: t - 30, tags: [['d', 'post']] })
    const post = await publishNew(c, keys, { kind: 30023, created_at: t - 10, tags: [['d', 'post']] })
    const other = await publishNew(c, keys, { kind: 30023, created_at: t - 30, tags: [['d', 'other']] })
    const late = await publish(c, fresh(keys, { kind: 30023, created_at: t - 20, tags: [['d', 'post']] }))
    expect(late.accepted).toBe(false)
    expect(standardPrefixes).toContain(late.prefix)
    const got = await reqEvents(c, [{ authors: [keys.pubkey], kinds: [30023] }])
    expect(idsOf(got)).toEqual([post.event.id, other.event.id])
  })

  it('treats a missing d tag as d = ""', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = makeKeys()
    const t = nowSeconds()
    await publishNew(c, keys, { kind: 30023, created_at: t - 20 })
    const empty = await publishNew(c, keys, { kind: 30023, created_at: t - 10, tags: [['d', '']] })
    expect(idsOf(await reqEvents(c, [{ authors: [keys.pubkey], kinds: [30023] }]))).toEqual([empty.event.id])
    const older = await publish(c, fresh(keys, { kind: 30023, created_at: t - 15 }))
    expect(older.accepted).toBe(false)
    expect(idsOf(await reqEvents(c, [{ authors: [keys.pubkey], kinds: [30023], '#d': [''] }]))).toEqual([empty.event.id])
  })
})

// Kind 20002, not 20001: 20001 is presence, which also needs AUTH as its author (presence.test.ts).
describe('ephemeral events (kinds 20000-29999)', () => {
  const relays = useRelays()

  it('delivers a kind 20002 live with OK true and never serves it from storage', async () => {
    const r = await relays.start()
    const sub = await client(r)
    const pub = await client(r)
    const keys = makeKeys()
    await reqEvents(sub, [{ authors: [keys.pubkey] }], 'eph')
    const e = fresh(keys, { kind: 20002 })
    expect((await publish(pub, e)).accepted).toBe(true)
    const f = await sub.next((x) => x[0] === 'EVENT' && x[1] === 'eph')
    expect((f[2] as NostrEvent).id).toBe(e.event.id)
    expect(await reqEvents(await client(r), [{ authors: [keys.pubkey] }])).toEqual([])
    expect(await reqEvents(await client(r), [{ ids: [e.event.id] }])).toEqual([])
  })

  it('answers OK true to an ephemeral event sent again and still stores nothing', async () => {
    const r = await relays.start()
    const sub = await client(r)
    const pub = await client(r)
    const keys = makeKeys()
    await reqEvents(sub, [{ authors: [keys.pubkey] }], 'eph2')
    const e = signEvent(keys, { kind: 20002, content: 'twice' })
    expect((await publish(pub, e)).accepted).toBe(true)
    expect((await publish(pub, e)).accepted).toBe(true)
    await sub.next((x) => x[0] === 'EVENT' && x[1] === 'eph2')
    expect(await reqEvents(await client(r), [{ ids: [e.event.id] }])).toEqual([])
  })
})
