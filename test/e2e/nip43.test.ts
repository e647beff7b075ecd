import { finalizeEvent } from 'nostr-tools/pure'
import { Relay, useWebSocketImplementation } from 'nostr-tools/relay'
import { describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { DEFAULT_COMMUNITY } from '../../src/relay/relay'
import { makeKeys, signEvent, type TestKeys } from '../support/events'
import { eventually } from '../support/eventually'
import { httpGet } from '../support/http'
import { callNip86 } from '../support/nip86-client'
import type { TestRelay } from '../support/relay'
import { auth, client, count, idsOf, inOneSecond, publish, publishNew, relayUrlOf, reqAnswer, reqEvents } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'
import type { TestClient } from '../support/ws-client'

const HOST = 'hive.test'

useWebSocketImplementation(WebSocket)

/**
 * NIP-43 on a community's host: invites (28935) for its admins, joins (28934) with a code and leaves (28936),
 * and the relay-signed member list (13534) and changes (8000/8001), read by the community's members.
 */
describe('NIP-43 community membership', () => {
  const relays = useRelays()

  /** a community `hive` on its own host, with `admin` as its admin */
  async function setup(overrides = {}) {
    const admin = makeKeys()
    const r = await relays.start({ communities: [{ id: 'hive', hosts: [HOST], admins: [admin.pubkey] }], ...overrides })
    return { r, admin }
  }

  async function authed(r: TestRelay, keys: TestKeys): Promise<TestClient> {
    const c = await client(r, HOST)
    expect((await auth(c, keys, relayUrlOf(r, HOST))).accepted).toBe(true)
    return c
  }

  const claimOf = (e: NostrEvent | undefined) => e?.tags.find((t) => t[0] === 'claim')?.[1]

  /** an invite `keys` asks for with a REQ for kind 28935 */
  async function inviteFor(r: TestRelay, keys: TestKeys): Promise<string> {
    const [invite] = await reqEvents(await authed(r, keys), [{ kinds: [28935] }])
    const claim = claimOf(invite)
    if (claim === undefined) throw new Error('no invite')
    return claim
  }

  const joinEvent = (keys: TestKeys, claim: string, created_at?: number) =>
    signEvent(keys, { kind: 28934, created_at, tags: [['-'], ['claim', claim]] })
  const leaveEvent = (keys: TestKeys, created_at?: number) => signEvent(keys, { kind: 28936, created_at, tags: [['-']] })

  /** the pubkeys the stored 13534 names, as `reader` reads it */
  async function membersListed(c: TestClient): Promise<string[] | undefined> {
    const [list] = await reqEvents(c, [{ kinds: [13534] }])
    return list?.tags.filter((t) => t[0] === 'member').map((t) => t[1] as string)
  }

  it('lets a nostr-tools client ask for an invite as an admin, join with it as a user and find itself listed', async () => {
    const admin = makeKeys()
    const r = await relays.start({ communities: [{ ...DEFAULT_COMMUNITY, admins: [admin.pubkey] }] })
    const joiner = makeKeys()
    const signer = (keys: TestKeys) => async (t: Parameters<typeof finalizeEvent>[0]) => finalizeEvent(t, keys.secretKey)
    const connectAs = async (keys: TestKeys) => {
      const relay = await Relay.connect(r.url)
      await eventually(() => (relay as unknown as { challenge?: string }).challenge !== undefined, 'the AUTH challenge')
      expect(await relay.auth(signer(keys))).toBe('')
      return relay
    }
    const fetch = (relay: Relay, kinds: number[]) =>
      new Promise<NostrEvent[]>((resolve) => {
        const got: NostrEvent[] = []
        relay.subscribe([{ kinds }], { onevent: (e) => void got.push(e), oneose: () => resolve(got) })
      })
    const [asAdmin, asJoiner] = [await connectAs(admin), await connectAs(joiner)]
    try {
      const claim = claimOf((await fetch(asAdmin, [28935]))[0])
      if (claim === undefined) throw new Error('no invite')
      const now = Math.floor(Date.now() / 1000)
      expect(
        await asJoiner.publish(finalizeEvent({ kind: 28934, created_at: now, tags: [['claim', claim]], content: '' }, joiner.secretKey)),
      ).toBe('')
      const [list] = await fetch(asJoiner, [13534])
      expect(list?.tags).toContainEqual(['member', joiner.pubkey])
      const leave = finalizeEvent({ kind: 28936, created_at: now, tags: [['-']], content: '' }, joiner.secretKey)
      expect(await asJoiner.publish(leave)).toBe('')
      await expect(asJoiner.publish(leave)).resolves.toMatch(/^duplicate: /)
    } finally {
      asAdmin.close()
      asJoiner.close()
    }
  })

  it('lists NIP-43 in the community’s NIP-11 supported_nips', async () => {
    const { r } = await setup()
    const doc = await httpGet(r, '/', { Accept: 'application/nostr+json', Host: `${HOST}:${r.port}` })
    expect((JSON.parse(doc.body) as { supported_nips: number[] }).supported_nips).toContain(43)
  })

  describe('invites (kind 28935)', () => {
    it('gives an admin a fresh relay-signed invite for each REQ, with its claim, its "-" and the admin’s p tag, then EOSE', async () => {
      const { r, admin } = await setup()
      const c = await authed(r, admin)
      const [first] = await reqEvents(c, [{ kinds: [28935] }])
      const [second] = await reqEvents(c, [{ kinds: [28935] }])
      expect(first?.pubkey).toBe(r.relay.communityPubkey('hive'))
      expect(first?.tags).toEqual([['-'], ['claim', claimOf(first)], ['p', admin.pubkey]])
      expect(claimOf(first)).toMatch(/^[A-Za-z0-9_-]{22}$/)
      expect(claimOf(second)).not.toBe(claimOf(first))
    })

    it('closes an invite-only REQ with auth-required: unauthenticated and restricted: for a non-admin; serves a mixed REQ without one', async () => {
      const { r } = await setup()
      const anon = await client(r, HOST)
      expect((await reqAnswer(anon, 'i1', [{ kinds: [28935] }])).slice(0, 2)).toEqual(['CLOSED', 'i1'])
      expect(anon.frames.find((f) => f[0] === 'CLOSED')?.[2]).toMatch(/^auth-required: /)
      const outsider = await authed(r, makeKeys())
      const closed = await reqAnswer(outsider, 'i2', [{ kinds: [28935] }])
      expect(closed[0]).toBe('CLOSED')
      expect(closed[2]).toMatch(/^restricted: /)
      expect(await reqEvents(outsider, [{ kinds: [28935] }, { kinds: [1] }])).toEqual([])
    })

    it('gives a member an invite only once the community lets members invite', async () => {
      const { r, admin } = await setup()
      const member = makeKeys()
      await callNip86(r, admin, 'allowpubkey', [member.pubkey], HOST)
      expect((await reqAnswer(await authed(r, member), 'i', [{ kinds: [28935] }]))[2]).toMatch(/^restricted: /)
      expect((await callNip86(r, admin, 'setcommunitypolicy', [{ membersInvite: true }], HOST)).json.result).toBe(true)
      expect(claimOf((await reqEvents(await authed(r, member), [{ kinds: [28935] }]))[0])).toBeDefined()
    })

    it('answers rate-limited: once the asker’s EVENT budget is spent', async () => {
      const many = { ratePerSecond: 1_000, burst: 1_000 }
      const { r, admin } = await setup({ rateLimits: { human: { events: { ratePerSecond: 0.01, burst: 2 }, reqs: many } } })
      const c = await authed(r, admin)
      for (let i = 0; i < 2; i++) expect(await reqEvents(c, [{ kinds: [28935] }])).toHaveLength(1)
      expect((await reqAnswer(c, 'over', [{ kinds: [28935] }]))[2]).toMatch(/^rate-limited: /)
    })
  })

  describe('joining (kind 28934)', () => {
    it('admits the holder of a code: OK true, then a relay-signed 13534 listing them and an 8000 naming them', async () => {
      const { r, admin } = await setup()
      const joiner = makeKeys()
      const c = await authed(r, joiner)
      const ok = await publish(c, joinEvent(joiner, await inviteFor(r, admin)))
      expect(ok).toMatchObject({ accepted: true, message: '' })
      const reader = await authed(r, admin)
      expect(await membersListed(reader)).toEqual([admin.pubkey, joiner.pubkey])
      const [list] = await reqEvents(reader, [{ kinds: [13534] }])
      expect(list?.pubkey).toBe(r.relay.communityPubkey('hive'))
      expect(list?.tags[0]).toEqual(['-'])
      const [added] = await reqEvents(reader, [{ kinds: [8000], '#p': [joiner.pubkey] }])
      expect(added?.tags).toEqual([['-'], ['p', joiner.pubkey]])
      expect(added?.pubkey).toBe(r.relay.communityPubkey('hive'))
    })

    it('makes the joiner a member for the community’s members-only write policy', async () => {
      const { r, admin } = await setup()
      await callNip86(r, admin, 'setcommunitypolicy', [{ writePolicy: 'members' }], HOST)
      const joiner = makeKeys()
      const c = await authed(r, joiner)
      expect((await publish(c, signEvent(joiner, { content: 'before' }))).prefix).toBe('restricted')
      expect((await publish(c, joinEvent(joiner, await inviteFor(r, admin)))).accepted).toBe(true)
      expect((await publish(c, signEvent(joiner, { content: 'after' }))).accepted).toBe(true)
    })

    it('answers OK true "duplicate:" to a member, and restricted: to a used, unknown or empty code', async () => {
      const { r, admin } = await setup()
      const [first, second] = [makeKeys(), makeKeys()]
      const code = await inviteFor(r, admin)
      expect((await publish(await authed(r, first), joinEvent(first, code))).accepted).toBe(true)
      const again = await publish(await authed(r, first), joinEvent(first, 'anything'))
      expect(again).toMatchObject({ accepted: true, prefix: 'duplicate' })
      expect(await publish(await authed(r, admin), joinEvent(admin, ''))).toMatchObject({ accepted: true, prefix: 'duplicate' })
      const c = await authed(r, second)
      for (const claim of [code, 'no-such-code', '', 'x'.repeat(200)])
        expect(await publish(c, joinEvent(second, claim))).toMatchObject({ accepted: false, prefix: 'restricted' })
    })

    it('accepts a join dated 300 s from now and refuses one dated 301 s away with invalid:', async () => {
      const { r, admin } = await setup()
      const [early, late] = [makeKeys(), makeKeys()]
      const [a, b] = [await inviteFor(r, admin), await inviteFor(r, admin)]
      const [atLimit, past] = [await authed(r, early), await authed(r, late)]
      const answers = await inOneSecond((now) =>
        Promise.all([publish(atLimit, joinEvent(early, a, now - 300)), publish(past, joinEvent(late, b, now + 301))]),
      )
      expect(answers[0].accepted).toBe(true)
      expect(answers[1]).toMatchObject({ accepted: false, prefix: 'invalid' })
    })

    it('refuses a join without a claim with invalid:, and one from a connection not authenticated as its author with auth-required:', async () => {
      const { r, admin } = await setup()
      const joiner = makeKeys()
      const c = await authed(r, joiner)
      expect(await publish(c, signEvent(joiner, { kind: 28934 }))).toMatchObject({ accepted: false, prefix: 'invalid' })
      const code = await inviteFor(r, admin)
      const someoneElse = await authed(r, makeKeys())
      const unprotected = signEvent(joiner, { kind: 28934, tags: [['claim', code]] })
      expect(await publish(someoneElse, unprotected)).toMatchObject({ accepted: false, prefix: 'auth-required' })
      // the code is still good: the refused request took no use of it, and the "-" tag is not required
      expect((await publish(c, unprotected)).accepted).toBe(true)
    })

    it('neither stores nor relays a join: a live subscriber to 28934 never sees it, a REQ finds none', async () => {
      const { r, admin } = await setup()
      const joiner = makeKeys()
      const watcher = await authed(r, admin)
      watcher.send(['REQ', 'live', { kinds: [28934, 1], authors: [joiner.pubkey] }])
      await watcher.next((f) => f[0] === 'EOSE' && f[1] === 'live')
      const c = await authed(r, joiner)
      expect((await publish(c, joinEvent(joiner, await inviteFor(r, admin)))).accepted).toBe(true)
      const marker = await publishNew(c, joiner, { kind: 1 })
      const first = await watcher.next((f) => f[0] === 'EVENT' && f[1] === 'live')
      expect((first[2] as NostrEvent).id).toBe(marker.event.id)
      expect(await reqEvents(watcher, [{ kinds: [28934] }])).toEqual([])
    })
  })

  describe('leaving (kind 28936)', () => {
    it('takes the author off the list: OK true, a 13534 without them and an 8001 naming them, which they still read', async () => {
      const { r, admin } = await setup()
      const member = makeKeys()
      await callNip86(r, admin, 'allowpubkey', [member.pubkey], HOST)
      const c = await authed(r, member)
      expect(await publish(c, leaveEvent(member))).toMatchObject({ accepted: true, message: '' })
      expect(await membersListed(await authed(r, admin))).toEqual([admin.pubkey])
      const [removed] = await reqEvents(c, [{ kinds: [8001], '#p': [member.pubkey] }])
      expect(removed?.tags).toEqual([['-'], ['p', member.pubkey]])
      expect(await reqEvents(c, [{ kinds: [13534] }])).toEqual([])
    })

    it('answers "duplicate:" to a non-member, restricted: to an admin and invalid: when dated 301 s away', async () => {
      const { r, admin } = await setup()
      const outsider = makeKeys()
      expect(await publish(await authed(r, outsider), leaveEvent(outsider))).toMatchObject({ accepted: true, prefix: 'duplicate' })
      expect(await publish(await authed(r, admin), leaveEvent(admin))).toMatchObject({ accepted: false, prefix: 'restricted' })
      const c = await authed(r, outsider)
      const late = await inOneSecond((now) => publish(c, leaveEvent(outsider, now - 301)))
      expect(late).toMatchObject({ accepted: false, prefix: 'invalid' })
    })
  })

  describe('who reads the member list and its changes', () => {
    it('serves 13534, 8000 and 8001 to members only by default: REQ, COUNT and live', async () => {
      const { r, admin } = await setup()
      const [member, outsider, joiner] = [makeKeys(), makeKeys(), makeKeys()]
      await callNip86(r, admin, 'allowpubkey', [member.pubkey], HOST)
      const [inside, outside, anon] = [await authed(r, member), await authed(r, outsider), await client(r, HOST)]
      expect(await membersListed(inside)).toEqual([admin.pubkey, member.pubkey])
      for (const c of [outside, anon]) {
        expect(await reqEvents(c, [{ kinds: [13534, 8000] }])).toEqual([])
        expect(await count(c, [{ kinds: [13534, 8000] }])).toBe(0)
      }
      expect(await count(inside, [{ kinds: [13534, 8000] }])).toBe(2)
      for (const c of [inside, outside]) {
        c.send(['REQ', 'live', { kinds: [8000], '#p': [joiner.pubkey] }, { kinds: [1], authors: [member.pubkey] }])
        await c.next((f) => f[0] === 'EOSE' && f[1] === 'live')
      }
      expect((await publish(await authed(r, joiner), joinEvent(joiner, await inviteFor(r, admin)))).accepted).toBe(true)
      const seen = await inside.next((f) => f[0] === 'EVENT' && f[1] === 'live')
      expect(seen[2]).toMatchObject({ kind: 8000, tags: [['-'], ['p', joiner.pubkey]] })
      const marker = await publishNew(inside, member, { kind: 1 })
      const first = await outside.next((f) => f[0] === 'EVENT' && f[1] === 'live')
      expect((first[2] as NostrEvent).id).toBe(marker.event.id)
    })

    it('serves them to every reader once the community makes member lists public', async () => {
      const { r, admin } = await setup()
      const member = makeKeys()
      await callNip86(r, admin, 'allowpubkey', [member.pubkey], HOST)
      await callNip86(r, admin, 'setcommunitypolicy', [{ publicMemberLists: true }], HOST)
      expect(await membersListed(await client(r, HOST))).toEqual([admin.pubkey, member.pubkey])
    })
  })

  describe('changes through NIP-86', () => {
    it('publishes an 8000 on allowpubkey and an 8001 on unallowpubkey, with the list following', async () => {
      const { r, admin } = await setup()
      const member = makeKeys()
      const reader = await authed(r, admin)
      await callNip86(r, admin, 'allowpubkey', [member.pubkey, 'first'], HOST)
      // a new reason is no new member
      await callNip86(r, admin, 'allowpubkey', [member.pubkey, 'second'], HOST)
      expect(await reqEvents(reader, [{ kinds: [8000], '#p': [member.pubkey] }])).toHaveLength(1)
      expect(await membersListed(reader)).toEqual([admin.pubkey, member.pubkey])
      await callNip86(r, admin, 'unallowpubkey', [member.pubkey], HOST)
      expect(await reqEvents(reader, [{ kinds: [8001], '#p': [member.pubkey] }])).toHaveLength(1)
      expect(await membersListed(reader)).toEqual([admin.pubkey])
    })

    it('createinvite makes a code of as many uses as asked', async () => {
      const { r, admin } = await setup()
      const answer = await callNip86(r, admin, 'createinvite', [3600, 2], HOST)
      const { code, uses, expires_at } = answer.json.result as { code: string; uses: number; expires_at: number }
      expect(uses).toBe(2)
      expect(expires_at - Math.floor(Date.now() / 1000)).toBeGreaterThan(3590)
      const joiners = [makeKeys(), makeKeys(), makeKeys()]
      const answers = []
      for (const k of joiners) answers.push(await publish(await authed(r, k), joinEvent(k, code)))
      expect(answers.map((a) => a.prefix ?? 'ok')).toEqual(['ok', 'ok', 'restricted'])
      expect((await callNip86(r, admin, 'createinvite', [10], HOST)).json.error).toMatch(/^invalid: /)
    })
  })

  it('refuses a 13534, 8000, 8001 or 28935 signed by anyone but the relay with restricted:', async () => {
    const { r } = await setup()
    const mallory = makeKeys()
    const c = await authed(r, mallory)
    for (const kind of [13534, 8000, 8001, 28935])
      expect(await publish(c, signEvent(mallory, { kind, tags: [['-'], ['p', mallory.pubkey]] }))).toMatchObject({
        accepted: false,
        prefix: 'restricted',
      })
  })

  it('names at most maxEventTags − 1 members: admins first, then the allowed list', async () => {
    const { r, admin } = await setup({ limits: { maxEventTags: 4 } })
    const allowed = [makeKeys(), makeKeys(), makeKeys()].map((k) => k.pubkey).sort()
    const reader = await authed(r, admin)
    for (const p of allowed.slice(0, 2)) await callNip86(r, admin, 'allowpubkey', [p], HOST)
    expect(await membersListed(reader)).toEqual([admin.pubkey, ...allowed.slice(0, 2)])
    await callNip86(r, admin, 'allowpubkey', [allowed[2]], HOST)
    expect(await reqEvents(reader, [{ kinds: [8000], '#p': [allowed[2] as string] }])).toHaveLength(1)
    expect(await membersListed(reader)).toEqual([admin.pubkey, ...allowed.slice(0, 2)])
  })

  it('publishes the member list at start for members who predate it (an existing database)', async () => {
    const { r, admin } = await setup()
    const member = makeKeys()
    // the row as an older build wrote it: no list was published
    await r.relay.close()
    relays.forget(r)
    const { openSqliteCommunityStore } = await import('../../src/infra/store/sqlite/sqlite-community-store')
    const store = openSqliteCommunityStore(`${r.dataDir}/apiary.sqlite`)
    await store.allowPubkey('hive', member.pubkey, 'from before')
    await store.close()
    const again = await relays.start({ communities: [{ id: 'hive', hosts: [HOST], admins: [admin.pubkey] }] }, r.dataDir)
    const reader = await authed(again, admin)
    const listed = await eventually(
      () => membersListed(reader),
      (m) => m !== undefined && m.length === 2,
      'the member list',
    )
    expect(listed).toEqual([admin.pubkey, member.pubkey])
    expect(idsOf(await reqEvents(reader, [{ kinds: [13534] }]))).toHaveLength(1)
  })
})
