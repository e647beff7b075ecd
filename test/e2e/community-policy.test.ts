import { describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { prefixOf } from '../../src/protocols/reasons'
import { makeKeys, type TestKeys } from '../support/events'
import { httpGet } from '../support/http'
import { authAsAgent, createChannel, delivered, subscribe } from '../support/nip29-client'
import { managementUrl, nip98Header, postNip86 } from '../support/nip86-client'
import type { TestRelay } from '../support/relay'
import { auth, client, count, fresh, idsOf, newSubId, publish, publishNew, relayUrlOf, reqAnswer, reqEvents } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'
import type { Frame } from '../support/ws-client'

/**
 * What a community's NIP-86 settings do on the WebSocket side, on one embedded node: the read and write
 * policies, the AUTH requirement, kind rules, banned events and blocked addresses. Settings are changed over
 * HTTP exactly as an admin client would; every refusal is asserted by its prefix.
 */

const WASPS = 'wasps.test'
const BEES = 'bees.test'
const GENEROUS = { ratePerSecond: 100_000, burst: 100_000 }

let callCounter = 0
/** One NIP-86 call; the body's `id` keeps two identical calls in one second from being refused as a replay. */
async function call(r: TestRelay, keys: TestKeys, method: string, params: unknown[] = [], host = WASPS) {
  const body = JSON.stringify({ id: ++callCounter, method, params })
  const answer = await postNip86(r, body, nip98Header(keys, managementUrl(r, host), body), host)
  if (answer.status !== 200 || answer.json.result !== true) throw new Error(`${method} answered ${answer.status} ${answer.body}`)
  return answer
}

const nip11Of = async (r: TestRelay, host: string) =>
  JSON.parse((await httpGet(r, '/', { Accept: 'application/nostr+json', Host: `${host}:${r.port}` })).body)

const closedPrefix = (f: Frame | number) =>
  typeof f === 'number' ? `COUNT ${f}` : f[0] === 'CLOSED' ? prefixOf(f[2] as string) : String(f[0])

/** The HTTP status a WebSocket upgrade to `host` on 127.0.0.1 gets: 101 when it opens. */
function upgradeStatus(r: TestRelay, host: string, address = '127.0.0.1'): Promise<number> {
  const target = address.includes(':') ? `[${address}]` : address
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://${target}:${r.port}`, { headers: { host: `${host}:${r.port}` } })
    ws.once('open', () => {
      ws.close()
      resolve(101)
    })
    ws.once('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0)
      res.resume()
      ws.terminate()
    })
    ws.once('error', (e) => reject(e))
  })
}

describe('community policies over NIP-86, enforced on the WebSocket', () => {
  const relays = useRelays()
  const operator = makeKeys()
  const waspAdmin = makeKeys()

  const start = (extra = {}) =>
    relays.start({
      operatorPubkeys: [operator.pubkey],
      communities: [
        { id: 'wasps', hosts: [WASPS], admins: [waspAdmin.pubkey] },
        { id: 'bees', hosts: [BEES] },
      ],
      rateLimits: { human: { events: GENEROUS, reqs: GENEROUS, api: GENEROUS } },
      ...extra,
    })
  const asAdmin = (r: TestRelay, method: string, params: unknown[] = []) => call(r, waspAdmin, method, params)
  const wasps = (r: TestRelay) => client(r, WASPS)
  const authed = async (r: TestRelay, keys: TestKeys, host = WASPS) => {
    const c = await client(r, host)
    expect((await auth(c, keys, relayUrlOf(r, host))).accepted).toBe(true)
    return c
  }

  describe('writePolicy "authenticated"', () => {
    it('answers an unauthenticated EVENT with OK false "auth-required:", and accepts it once the author authenticated', async () => {
      const r = await start()
      await asAdmin(r, 'setcommunitypolicy', [{ writePolicy: 'authenticated' }])
      const author = makeKeys()
      const c = await wasps(r)
      const e = fresh(author)
      expect(await publish(c, e)).toMatchObject({ accepted: false, prefix: 'auth-required' })
      expect((await auth(c, author, relayUrlOf(r, WASPS))).accepted).toBe(true)
      expect(await publish(c, e)).toEqual({ accepted: true, message: '', prefix: undefined })
      expect(idsOf(await reqEvents(c, [{ ids: [e.event.id] }]))).toEqual([e.event.id])
    })

    it("leaves another community's writes public", async () => {
      const r = await start()
      await asAdmin(r, 'setcommunitypolicy', [{ writePolicy: 'authenticated' }])
      expect((await publish(await client(r, BEES), fresh(makeKeys()))).accepted).toBe(true)
    })
  })

  describe('writePolicy "members"', () => {
    it('answers an authenticated non-member with "restricted:", and accepts the pubkey right after allowpubkey', async () => {
      const r = await start()
      await asAdmin(r, 'setcommunitypolicy', [{ writePolicy: 'members' }])
      const someone = makeKeys()
      const c = await wasps(r)
      expect((await publish(c, fresh(someone))).prefix).toBe('auth-required')
      expect((await auth(c, someone, relayUrlOf(r, WASPS))).accepted).toBe(true)
      expect((await publish(c, fresh(someone))).prefix).toBe('restricted')
      await asAdmin(r, 'allowpubkey', [someone.pubkey])
      expect(await publish(c, fresh(someone))).toEqual({ accepted: true, message: '', prefix: undefined })
    })

    it('refuses a pubkey with "restricted:" right after unallowpubkey took it off the allow list', async () => {
      const r = await start()
      await asAdmin(r, 'setcommunitypolicy', [{ writePolicy: 'members' }])
      const member = makeKeys()
      await asAdmin(r, 'allowpubkey', [member.pubkey])
      const c = await authed(r, member)
      expect((await publish(c, fresh(member))).accepted).toBe(true)
      await asAdmin(r, 'unallowpubkey', [member.pubkey])
      expect((await publish(c, fresh(member))).prefix).toBe('restricted')
    })

    it('accepts a pubkey allowed before it ever wrote, and a community admin who is on no allow list', async () => {
      const r = await start()
      await asAdmin(r, 'setcommunitypolicy', [{ writePolicy: 'members' }])
      const member = makeKeys()
      await asAdmin(r, 'allowpubkey', [member.pubkey])
      expect((await publish(await authed(r, member), fresh(member))).accepted).toBe(true)
      expect((await publish(await authed(r, waspAdmin), fresh(waspAdmin))).accepted).toBe(true)
    })

    it('accepts an agent whose owner is allowed (by owner attestation at AUTH), and refuses one whose owner is not with "restricted:"', async () => {
      const r = await start()
      await asAdmin(r, 'setcommunitypolicy', [{ writePolicy: 'members' }])
      const [owner, stranger, agent, strayAgent] = [makeKeys(), makeKeys(), makeKeys(), makeKeys()]
      await asAdmin(r, 'allowpubkey', [owner.pubkey])
      const onAgent = await wasps(r)
      expect((await authAsAgent(onAgent, agent, owner, relayUrlOf(r, WASPS))).accepted).toBe(true)
      expect(await publish(onAgent, fresh(agent))).toEqual({ accepted: true, message: '', prefix: undefined })
      const onStray = await wasps(r)
      expect((await authAsAgent(onStray, strayAgent, stranger, relayUrlOf(r, WASPS))).accepted).toBe(true)
      expect((await publish(onStray, fresh(strayAgent))).prefix).toBe('restricted')
    })

    it('refuses an agent that authenticated without an attestation even though its would-be owner is allowed', async () => {
      const r = await start()
      await asAdmin(r, 'setcommunitypolicy', [{ writePolicy: 'members' }])
      const [owner, agent] = [makeKeys(), makeKeys()]
      await asAdmin(r, 'allowpubkey', [owner.pubkey])
      expect((await publish(await authed(r, agent), fresh(agent))).prefix).toBe('restricted')
    })
  })

  describe('readPolicy "authenticated"', () => {
    it('answers REQ and COUNT from an unauthenticated socket with CLOSED "auth-required:", and serves the REQ after AUTH', async () => {
      const r = await start()
      const author = makeKeys()
      const stored = await publishNew(await wasps(r), author)
      await asAdmin(r, 'setcommunitypolicy', [{ readPolicy: 'authenticated' }])
      const c = await wasps(r)
      const filter = { authors: [author.pubkey] }
      expect(closedPrefix(await reqAnswer(c, newSubId(), [filter]))).toBe('auth-required')
      expect(closedPrefix(await count(c, [filter]))).toBe('auth-required')
      expect((await auth(c, makeKeys(), relayUrlOf(r, WASPS))).accepted).toBe(true)
      expect(idsOf(await reqEvents(c, [filter]))).toEqual([stored.event.id])
      expect(await count(c, [filter])).toBe(1)
    })

    it('stops live delivery to an unauthenticated socket that subscribed before the change, while an authenticated one still receives', async () => {
      const r = await start()
      const author = makeKeys()
      const filter = { authors: [author.pubkey] }
      const anon = await wasps(r)
      const anonSub = (await subscribe(anon, [filter])).subId
      const reader = await authed(r, makeKeys())
      const readerSub = (await subscribe(reader, [filter])).subId
      const writer = await wasps(r)
      // before the change the anonymous subscription is live
      const before = await publishNew(writer, author)
      await delivered(anon, anonSub, before.event.id)
      await delivered(reader, readerSub, before.event.id)
      await asAdmin(r, 'setcommunitypolicy', [{ readPolicy: 'authenticated' }])
      const after = await publishNew(writer, author)
      await delivered(reader, readerSub, after.event.id)
      // one fan-out pushes to both sockets; an answer the anonymous socket asks for afterwards comes after it
      expect(closedPrefix(await reqAnswer(anon, newSubId(), [filter]))).toBe('auth-required')
      expect(anon.frames.some((f) => f[0] === 'EVENT' && (f[2] as NostrEvent).id === after.event.id)).toBe(false)
    })
  })

  describe('readPolicy "members"', () => {
    it('answers an authenticated non-member with CLOSED "restricted:" and serves an allowed pubkey its events and EOSE', async () => {
      const r = await start()
      const author = makeKeys()
      const stored = await publishNew(await wasps(r), author)
      const member = makeKeys()
      await asAdmin(r, 'allowpubkey', [member.pubkey])
      await asAdmin(r, 'setcommunitypolicy', [{ readPolicy: 'members' }])
      const filter = { authors: [author.pubkey] }
      const outsider = await authed(r, makeKeys())
      expect(closedPrefix(await reqAnswer(outsider, newSubId(), [filter]))).toBe('restricted')
      expect(closedPrefix(await count(outsider, [filter]))).toBe('restricted')
      expect(closedPrefix(await reqAnswer(await wasps(r), newSubId(), [filter]))).toBe('auth-required')
      expect(idsOf(await reqEvents(await authed(r, member), [filter]))).toEqual([stored.event.id])
    })

    it('delivers live events to a member and not to an authenticated non-member subscribed before the change', async () => {
      const r = await start()
      const member = makeKeys()
      await asAdmin(r, 'allowpubkey', [member.pubkey])
      const author = makeKeys()
      const filter = { authors: [author.pubkey] }
      const outsider = await authed(r, makeKeys())
      const outsiderSub = (await subscribe(outsider, [filter])).subId
      const inside = await authed(r, member)
      const insideSub = (await subscribe(inside, [filter])).subId
      await asAdmin(r, 'setcommunitypolicy', [{ readPolicy: 'members' }])
      const e = await publishNew(await wasps(r), author)
      await delivered(inside, insideSub, e.event.id)
      expect(closedPrefix(await reqAnswer(outsider, newSubId(), [filter]))).toBe('restricted')
      expect(outsider.frames.some((f) => f[0] === 'EVENT' && f[1] === outsiderSub && (f[2] as NostrEvent).id === e.event.id)).toBe(false)
    })
  })

  describe('authRequired', () => {
    it('refuses unauthenticated REQ, COUNT and EVENT with "auth-required:", and serves them after AUTH', async () => {
      const r = await start()
      await asAdmin(r, 'setcommunitypolicy', [{ authRequired: true }])
      const author = makeKeys()
      const c = await wasps(r)
      const e = fresh(author)
      const filter = { authors: [author.pubkey] }
      expect((await publish(c, e)).prefix).toBe('auth-required')
      expect(closedPrefix(await reqAnswer(c, newSubId(), [filter]))).toBe('auth-required')
      expect(closedPrefix(await count(c, [filter]))).toBe('auth-required')
      expect((await auth(c, author, relayUrlOf(r, WASPS))).accepted).toBe(true)
      expect((await publish(c, e)).accepted).toBe(true)
      expect(idsOf(await reqEvents(c, [filter]))).toEqual([e.event.id])
      expect(await count(c, [filter])).toBe(1)
    })

    it("states limitation.auth_required in NIP-11 on that community's host only", async () => {
      const r = await start()
      await asAdmin(r, 'setcommunitypolicy', [{ authRequired: true }])
      expect((await nip11Of(r, WASPS)).limitation.auth_required).toBe(true)
      expect((await nip11Of(r, BEES)).limitation.auth_required).toBe(false)
      expect((await nip11Of(r, '127.0.0.1')).limitation.auth_required).toBe(false)
      // and the other communities still serve anonymous sockets
      const bees = await client(r, BEES)
      expect((await publish(bees, fresh(makeKeys()))).accepted).toBe(true)
      expect(await reqAnswer(bees, 'bees-sub', [{ kinds: [1] }])).toEqual(['EOSE', 'bees-sub'])
    })
  })

  describe('kind rules', () => {
    it('accepts only allowed kinds after allowkind 1 ("blocked:" otherwise), NIP-29 and deletion kinds still pass', async () => {
      const r = await start()
      await asAdmin(r, 'allowkind', [1])
      const keys = makeKeys()
      const c = await wasps(r)
      expect((await publish(c, fresh(keys, { kind: 7 }))).prefix).toBe('blocked')
      const note = await publishNew(c, keys, { kind: 1 })
      const created = await createChannel(c, keys, 'hive-chat')
      expect(created.ok).toEqual({ accepted: true, message: '', prefix: undefined })
      expect((await publish(c, fresh(keys, { kind: 5, tags: [['e', note.event.id]] }))).accepted).toBe(true)
      // the other community has no rules
      expect((await publish(await client(r, BEES), fresh(keys, { kind: 7 }))).accepted).toBe(true)
    })

    it('refuses a kind with "blocked:" after disallowkind, and accepts other kinds again once no kind is allowed', async () => {
      const r = await start()
      await asAdmin(r, 'allowkind', [1])
      await asAdmin(r, 'disallowkind', [1])
      const keys = makeKeys()
      const c = await wasps(r)
      expect((await publish(c, fresh(keys, { kind: 1 }))).prefix).toBe('blocked')
      expect((await publish(c, fresh(keys, { kind: 7 }))).accepted).toBe(true)
    })
  })

  describe('banned events', () => {
    it('removes the stored event from REQ and refuses the same event with "blocked:", not "duplicate:", on the connection that first sent it', async () => {
      const r = await start()
      const c = await wasps(r)
      const e = await publishNew(c, makeKeys())
      // resent at once: the recent-id guard knows it
      expect((await publish(c, e)).prefix).toBe('duplicate')
      await asAdmin(r, 'banevent', [e.event.id, 'doxxing'])
      expect(await reqEvents(c, [{ ids: [e.event.id] }])).toEqual([])
      expect(await publish(c, e)).toMatchObject({ accepted: false, prefix: 'blocked' })
      expect(await publish(await wasps(r), e)).toMatchObject({ accepted: false, prefix: 'blocked' })
      expect(await reqEvents(await wasps(r), [{ ids: [e.event.id] }])).toEqual([])
    })

    it('refuses an event banned before it was ever sent with "blocked:"', async () => {
      const r = await start()
      const e = fresh(makeKeys())
      await asAdmin(r, 'banevent', [e.event.id])
      expect(await publish(await wasps(r), e)).toMatchObject({ accepted: false, prefix: 'blocked' })
    })

    it('accepts and stores the event again after allowevent', async () => {
      const r = await start()
      const c = await wasps(r)
      const e = await publishNew(c, makeKeys())
      await asAdmin(r, 'banevent', [e.event.id])
      expect((await publish(c, e)).prefix).toBe('blocked')
      await asAdmin(r, 'allowevent', [e.event.id])
      expect(await publish(c, e)).toEqual({ accepted: true, message: '', prefix: undefined })
      expect(idsOf(await reqEvents(c, [{ ids: [e.event.id] }]))).toEqual([e.event.id])
    })

    it('accepts an event after allowevent from a connection that never sent it', async () => {
      const r = await start()
      const e = await publishNew(await wasps(r), makeKeys())
      await asAdmin(r, 'banevent', [e.event.id])
      await asAdmin(r, 'allowevent', [e.event.id])
      const other = await wasps(r)
      expect(await publish(other, e)).toEqual({ accepted: true, message: '', prefix: undefined })
      expect(idsOf(await reqEvents(other, [{ ids: [e.event.id] }]))).toEqual([e.event.id])
    })
  })

  describe('blocked IP addresses', () => {
    it("answers a new WebSocket from a blocked address with HTTP 403 on that community's host only, and lets it in after unblockip", async () => {
      const r = await start()
      expect(await upgradeStatus(r, WASPS)).toBe(101)
      await asAdmin(r, 'blockip', ['127.0.0.1', 'scraper'])
      expect(await upgradeStatus(r, WASPS)).toBe(403)
      expect(await upgradeStatus(r, BEES)).toBe(101)
      expect(await upgradeStatus(r, '127.0.0.1')).toBe(101)
      await asAdmin(r, 'unblockip', ['127.0.0.1'])
      expect(await upgradeStatus(r, WASPS)).toBe(101)
      // the socket that got in works
      const c = await wasps(r)
      expect((await publish(c, fresh(makeKeys()))).accepted).toBe(true)
    })

    it('refuses 127.0.0.1 blocked in its IPv4-mapped IPv6 spelling', async () => {
      const r = await start()
      await asAdmin(r, 'blockip', ['::ffff:127.0.0.1'])
      expect(await upgradeStatus(r, WASPS)).toBe(403)
      expect(await upgradeStatus(r, BEES)).toBe(101)
    })

    it('refuses a blocked IPv4 peer on a dual-stack listener (which reports it as ::ffff:127.0.0.1), and not ::1', async () => {
      const r = await start({ host: '::' })
      await asAdmin(r, 'blockip', ['127.0.0.1'])
      expect(await upgradeStatus(r, WASPS, '127.0.0.1')).toBe(403)
      expect(await upgradeStatus(r, BEES, '127.0.0.1')).toBe(101)
      expect(await upgradeStatus(r, WASPS, '::1')).toBe(101)
      await asAdmin(r, 'blockip', ['::1'])
      expect(await upgradeStatus(r, WASPS, '::1')).toBe(403)
      await asAdmin(r, 'unblockip', ['::ffff:127.0.0.1'])
      expect(await upgradeStatus(r, WASPS, '127.0.0.1')).toBe(101)
    })
  })
})
