import { describe, expect, it } from 'vitest'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { makeKeys, signEvent } from '../support/events'
import { labelledMetric } from '../support/metrics'
import {
  auth,
  authEvent,
  challengeOf,
  client,
  fresh,
  idsOf,
  nowSeconds,
  publish,
  publishNew,
  relayUrlOf,
  reqAnswer,
  reqEvents,
} from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'
import { connect } from '../support/ws-client'

describe('authentication (NIP-42)', () => {
  const relays = useRelays()

  it('sends an AUTH challenge as soon as the connection opens', async () => {
    const r = await relays.start()
    const c = await client(r)
    expect(c.frames[0]?.[0] ?? (await c.next((f) => f[0] === 'AUTH'))[0]).toBe('AUTH')
    expect(await challengeOf(c)).toMatch(/^[0-9a-f]{32,}$/)
  })

  it('gives each connection its own challenge', async () => {
    const r = await relays.start()
    const a = await challengeOf(await client(r))
    const b = await challengeOf(await client(r))
    expect(a).not.toBe(b)
  })

  it('answers a valid AUTH with OK true', async () => {
    const r = await relays.start()
    const c = await client(r)
    expect(await auth(c, makeKeys(), relayUrlOf(r))).toEqual({ accepted: true, message: '', prefix: undefined })
  })

  it('accepts the relay URL with a trailing slash', async () => {
    const r = await relays.start()
    const c = await client(r)
    expect((await auth(c, makeKeys(), `${relayUrlOf(r)}/`)).accepted).toBe(true)
  })

  it('refuses a challenge from another connection with "invalid:"', async () => {
    const r = await relays.start()
    const other = await challengeOf(await client(r))
    const c = await client(r)
    expect(await auth(c, makeKeys(), relayUrlOf(r), { challenge: other })).toMatchObject({ accepted: false, prefix: 'invalid' })
  })

  it('refuses a relay tag naming another relay with "invalid:"', async () => {
    const r = await relays.start()
    const c = await client(r)
    expect(await auth(c, makeKeys(), 'wss://relay.example.com')).toMatchObject({ accepted: false, prefix: 'invalid' })
    expect(await auth(c, makeKeys(), `ws://127.0.0.1:${r.port + 1}`)).toMatchObject({ accepted: false, prefix: 'invalid' })
  })

  it('refuses with "invalid:" a relay tag naming a port the client made up in its Host header, and counts it', async () => {
    const r = await relays.start({ communities: [{ id: 'beta', hosts: ['beta.test'] }] })
    const madeUp = r.port === 65_535 ? r.port - 1 : r.port + 1
    const c = await connect(r.url, { host: `beta.test:${madeUp}` })
    const keys = makeKeys()
    const before = await labelledMetric(r, 'apiary_auth_rejected_total', { prefix: 'invalid' })
    expect(await auth(c, keys, `ws://beta.test:${madeUp}`)).toMatchObject({ accepted: false, prefix: 'invalid' })
    expect(await labelledMetric(r, 'apiary_auth_rejected_total', { prefix: 'invalid' })).toBe(before + 1)
    // the binding's own URL is still this relay's, and so is the port the socket really came in on
    expect((await auth(c, keys, 'ws://beta.test')).accepted).toBe(true)
    const onPort = await client(r, 'beta.test')
    expect((await auth(onPort, keys, relayUrlOf(r, 'beta.test'))).accepted).toBe(true)
  })

  it('refuses an AUTH created more than 600 s ago or ahead with "invalid:"', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = makeKeys()
    expect(await auth(c, keys, relayUrlOf(r), { created_at: nowSeconds() - 700 })).toMatchObject({ accepted: false, prefix: 'invalid' })
    expect(await auth(c, keys, relayUrlOf(r), { created_at: nowSeconds() + 700 })).toMatchObject({ accepted: false, prefix: 'invalid' })
  })

  it('refuses an AUTH with a bad signature with "invalid:" and stays unauthenticated', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = makeKeys()
    const { event } = authEvent(keys, await challengeOf(c), relayUrlOf(r))
    const bad = { ...event, sig: (event.sig[0] === '0' ? '1' : '0') + event.sig.slice(1) }
    c.send(['AUTH', bad])
    const f = await c.ok(event.id)
    expect(f[2]).toBe(false)
    expect(f[3]).toMatch(/^invalid: /)
    // a protected event by that key is still refused: the failed AUTH did not count
    expect(await publish(c, fresh(keys, { tags: [['-']] }))).toMatchObject({ accepted: false, prefix: 'auth-required' })
  })

  it('refuses an AUTH whose kind is not 22242 with "invalid:"', async () => {
    const r = await relays.start()
    const c = await client(r)
    const e = signEvent(makeKeys(), {
      kind: 1,
      tags: [
        ['relay', relayUrlOf(r)],
        ['challenge', await challengeOf(c)],
      ],
    })
    c.send(['AUTH', e.event])
    expect((await c.ok(e.event.id)).slice(2, 3)).toEqual([false])
  })

  it('refuses on community beta an AUTH naming the default community’s URL', async () => {
    const r = await relays.start({ communities: [{ id: 'beta', hosts: ['beta.test'] }] })
    const c = await client(r, 'beta.test')
    const keys = makeKeys()
    expect(await auth(c, keys, relayUrlOf(r))).toMatchObject({ accepted: false, prefix: 'invalid' })
    expect((await auth(c, keys, relayUrlOf(r, 'beta.test'))).accepted).toBe(true)
  })

  it('refuses a kind 22242 sent as EVENT and never stores it', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = makeKeys()
    const e = authEvent(keys, await challengeOf(c), relayUrlOf(r))
    const ok = await publish(c, e)
    expect(ok.accepted).toBe(false)
    expect(ok.prefix).toBe('invalid')
    expect(await reqEvents(c, [{ kinds: [22242] }])).toEqual([])
  })

  it('allows several pubkeys on one connection', async () => {
    const r = await relays.start()
    const c = await client(r)
    const a = makeKeys()
    const b = makeKeys()
    expect((await auth(c, a, relayUrlOf(r))).accepted).toBe(true)
    expect((await auth(c, b, relayUrlOf(r))).accepted).toBe(true)
    expect((await publish(c, fresh(a, { tags: [['-']] }))).accepted).toBe(true)
    expect((await publish(c, fresh(b, { tags: [['-']] }))).accepted).toBe(true)
  })
})

describe('direct messages are served only to their parties (kinds 4 and 1059)', () => {
  const relays = useRelays()

  async function setup() {
    const r = await relays.start()
    const alice = makeKeys()
    const bob = makeKeys()
    const carol = makeKeys()
    const pub = await client(r)
    const dm = await publishNew(pub, alice, { kind: 4, tags: [['p', bob.pubkey]] })
    const note = await publishNew(pub, alice, { kind: 1 })
    const wrapper = makeKeys() // a gift wrap is signed by a throwaway key
    const wrap = await publishNew(pub, wrapper, { kind: 1059, tags: [['p', bob.pubkey]] })
    return { r, alice, bob, carol, dm, note, wrap, wrapper }
  }

  it('closes an unauthenticated REQ for kinds [4] with "auth-required:"', async () => {
    const { r } = await setup()
    const c = await client(r)
    const f = await reqAnswer(c, 'dms', [{ kinds: [4] }])
    expect(f[0]).toBe('CLOSED')
    expect(f[2]).toMatch(/^auth-required: /)
    const g = await reqAnswer(c, 'wraps', [{ kinds: [1059], '#p': ['a'.repeat(64)] }])
    expect(g[0]).toBe('CLOSED')
    expect(g[2]).toMatch(/^auth-required: /)
  })

  it('answers an unauthenticated filter without kinds with the other events but not the DM', async () => {
    const { r, alice, note } = await setup()
    const c = await client(r)
    expect(idsOf(await reqEvents(c, [{ authors: [alice.pubkey] }]))).toEqual([note.event.id])
    expect(idsOf(await reqEvents(c, [{ kinds: [1, 4] }]))).toEqual([note.event.id])
  })

  it('serves the DM to its author and its p-tagged recipient after AUTH', async () => {
    const { r, alice, bob, dm, wrap } = await setup()
    const asAlice = await client(r)
    await auth(asAlice, alice, relayUrlOf(r))
    expect(idsOf(await reqEvents(asAlice, [{ kinds: [4] }]))).toEqual([dm.event.id])
    const asBob = await client(r)
    await auth(asBob, bob, relayUrlOf(r))
    expect(idsOf(await reqEvents(asBob, [{ kinds: [4] }]))).toEqual([dm.event.id])
    expect(idsOf(await reqEvents(asBob, [{ kinds: [1059], '#p': [bob.pubkey] }]))).toEqual([wrap.event.id])
  })

  it('serves nothing of it to a third party authenticated as someone else', async () => {
    const { r, carol, alice, note } = await setup()
    const c = await client(r)
    await auth(c, carol, relayUrlOf(r))
    expect(await reqEvents(c, [{ kinds: [4, 1059] }])).toEqual([])
    expect(idsOf(await reqEvents(c, [{ authors: [alice.pubkey] }]))).toEqual([note.event.id])
  })

  it('delivers a live DM only to the authenticated parties', async () => {
    const { r, alice, bob, carol } = await setup()
    const asBob = await client(r)
    await auth(asBob, bob, relayUrlOf(r))
    const asCarol = await client(r)
    await auth(asCarol, carol, relayUrlOf(r))
    const anon = await client(r)
    await reqEvents(asBob, [{ kinds: [4] }], 'bob-dms')
    await reqEvents(asCarol, [{ kinds: [4] }], 'carol-dms')
    await reqEvents(anon, [{ authors: [alice.pubkey] }], 'anon-alice')
    const pub = await client(r)
    const toBob = await publishNew(pub, alice, { kind: 4, tags: [['p', bob.pubkey]] })
    // markers each reader can see, sent after the DM on the same subscriptions
    const toCarol = await publishNew(pub, alice, { kind: 4, tags: [['p', carol.pubkey]] })
    const publicNote = await publishNew(pub, alice, { kind: 1 })
    await asBob.next((f) => f[0] === 'EVENT' && f[1] === 'bob-dms' && (f[2] as NostrEvent).id === toBob.event.id)
    await asCarol.next((f) => f[0] === 'EVENT' && f[1] === 'carol-dms' && (f[2] as NostrEvent).id === toCarol.event.id)
    expect(asCarol.frames.some((f) => f[0] === 'EVENT' && (f[2] as NostrEvent).id === toBob.event.id)).toBe(false)
    await anon.next((f) => f[0] === 'EVENT' && f[1] === 'anon-alice' && (f[2] as NostrEvent).id === publicNote.event.id)
    const anonIds = anon.frames.filter((f) => f[0] === 'EVENT').map((f) => (f[2] as NostrEvent).id)
    expect(anonIds).not.toContain(toBob.event.id)
    expect(anonIds).not.toContain(toCarol.event.id)
    expect(anonIds).toContain(publicNote.event.id)
    expect(asBob.frames.some((f) => f[0] === 'EVENT' && (f[2] as NostrEvent).id === toCarol.event.id)).toBe(false)
  })
})

describe('a relay with authRequired', () => {
  const relays = useRelays()

  it('refuses EVENT, REQ and COUNT with "auth-required:" until the client authenticates, then serves them', async () => {
    const r = await relays.start({ authRequired: true })
    const c = await client(r)
    const keys = makeKeys()
    const e = fresh(keys)
    expect(await publish(c, e)).toMatchObject({ accepted: false, prefix: 'auth-required' })
    const refused = await reqAnswer(c, 'before', [{ kinds: [1] }])
    expect(refused[0]).toBe('CLOSED')
    expect(refused[2]).toMatch(/^auth-required: /)
    c.send(['COUNT', 'count-before', { kinds: [1] }])
    const countRefused = await c.next((f) => f[1] === 'count-before')
    expect(countRefused[0]).toBe('CLOSED')
    expect(countRefused[2]).toMatch(/^auth-required: /)

    expect((await auth(c, keys, relayUrlOf(r))).accepted).toBe(true)
    expect((await publish(c, e)).accepted).toBe(true)
    expect(idsOf(await reqEvents(c, [{ kinds: [1] }]))).toEqual([e.event.id])
  })

  it('lets an authenticated client publish an event signed by another key (auth is for the connection)', async () => {
    const r = await relays.start({ authRequired: true })
    const c = await client(r)
    await auth(c, makeKeys(), relayUrlOf(r))
    expect((await publish(c, fresh(makeKeys()))).accepted).toBe(true)
  })
})

describe('limits and unreadable direct messages', () => {
  const relays = useRelays()

  // BUG (src/actors/community/community-actor.ts onSubscribe): the store applies `limit` before canRead
  // drops the DMs this connection may not read, so unreadable DMs take places in the limit.
  it('fills a REQ limit with readable events when newer DMs are hidden', async () => {
    const r = await relays.start()
    const pub = await client(r)
    const alice = makeKeys()
    const bob = makeKeys()
    const t = nowSeconds()
    const note = await publishNew(pub, alice, { kind: 1, created_at: t - 10 })
    await publishNew(pub, alice, { kind: 4, created_at: t, tags: [['p', bob.pubkey]] })
    const anon = await client(r)
    expect(idsOf(await reqEvents(anon, [{ authors: [alice.pubkey], limit: 1 }]))).toEqual([note.event.id])
  })
})
