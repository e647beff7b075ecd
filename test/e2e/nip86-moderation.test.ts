import { describe, expect, it } from 'vitest'
import { prefixOf } from '../../src/protocols/reasons'
import { makeKeys, type TestKeys } from '../support/events'
import { eventually } from '../support/eventually'
import { httpGet } from '../support/http'
import { managementUrl, nip98Header, postNip86 } from '../support/nip86-client'
import type { TestRelay } from '../support/relay'
import { auth, client, fresh, idsOf, publish, publishNew, relayUrlOf, reqEvents } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'

const errorPrefix = (a: { json: { error?: string } }) => prefixOf(a.json.error ?? '')
const NOSTR_JSON = { Accept: 'application/nostr+json' }
const WASPS = 'wasps.test'
// every test here calls many methods in a row: only the api rate-limit tests meet a budget
const GENEROUS = { ratePerSecond: 100_000, burst: 100_000 }

let callCounter = 0
/**
 * callNip86, with a JSON-RPC style `id` in the body (the relay ignores it): two identical calls in one second
 * would otherwise sign the same auth event, and the second would be refused as a replay.
 */
const callNip86 = (r: TestRelay, keys: TestKeys, method: string, params: unknown[] = [], host = '127.0.0.1') => {
  const body = JSON.stringify({ id: ++callCounter, method, params })
  return postNip86(r, body, nip98Header(keys, managementUrl(r, host), body), host)
}

const nip11Of = async (r: TestRelay, host = '127.0.0.1') =>
  JSON.parse((await httpGet(r, '/', { ...NOSTR_JSON, Host: `${host}:${r.port}` })).body)

describe('moderation over NIP-86: lists, relay info, kinds, IPs, timeouts and policy', () => {
  const relays = useRelays()
  const operator = makeKeys()
  const waspAdmin = makeKeys()

  const start = (extra = {}) =>
    relays.start({
      operatorPubkeys: [operator.pubkey],
      communities: [{ id: 'wasps', hosts: [WASPS], admins: [waspAdmin.pubkey] }],
      rateLimits: { human: { api: GENEROUS } },
      ...extra,
    })
  const asAdmin = (r: TestRelay, method: string, params: unknown[] = []) => callNip86(r, waspAdmin, method, params, WASPS)

  it("lets a community admin call every moderation method on their community's host, and answers 403 elsewhere", async () => {
    const r = await start()
    for (const method of ['listallowedpubkeys', 'listbannedevents', 'listallowedkinds', 'listdisallowedkinds', 'listblockedips']) {
      const a = await asAdmin(r, method)
      expect(a.status).toBe(200)
      expect(a.json).toEqual({ result: [] })
    }
    const elsewhere = await callNip86(r, waspAdmin, 'allowkind', [1])
    expect(elsewhere.status).toBe(403)
    expect(errorPrefix(elsewhere)).toBe('restricted')
  })

  describe('the allow list', () => {
    it('lists a pubkey allowpubkey added, with its reason, and drops it after unallowpubkey', async () => {
      const r = await start()
      const [member, other] = [makeKeys(), makeKeys()]
      expect((await asAdmin(r, 'allowpubkey', [member.pubkey, 'founding member'])).json).toEqual({ result: true })
      expect((await asAdmin(r, 'allowpubkey', [other.pubkey])).json).toEqual({ result: true })
      const listed = (await asAdmin(r, 'listallowedpubkeys')).json.result
      expect(listed).toEqual(
        expect.arrayContaining([
          { pubkey: member.pubkey, reason: 'founding member' },
          { pubkey: other.pubkey, reason: '' },
        ]),
      )
      expect(listed).toHaveLength(2)
      expect((await asAdmin(r, 'unallowpubkey', [other.pubkey])).json).toEqual({ result: true })
      expect((await asAdmin(r, 'listallowedpubkeys')).json.result).toEqual([{ pubkey: member.pubkey, reason: 'founding member' }])
      // only in the community whose host carried the calls
      expect((await callNip86(r, operator, 'listallowedpubkeys')).json.result).toEqual([])
    })

    it('lifts a ban when allowpubkey allows the pubkey, and banpubkey takes it off the allow list (NIP-86)', async () => {
      const r = await start()
      const someone = makeKeys()
      await asAdmin(r, 'banpubkey', [someone.pubkey, 'spam'])
      await asAdmin(r, 'allowpubkey', [someone.pubkey, 'appeal granted'])
      expect((await asAdmin(r, 'listbannedpubkeys')).json.result).toEqual([])
      await asAdmin(r, 'banpubkey', [someone.pubkey, 'spam again'])
      expect((await asAdmin(r, 'listallowedpubkeys')).json.result).toEqual([])
      expect((await asAdmin(r, 'listbannedpubkeys')).json.result).toEqual([{ pubkey: someone.pubkey, reason: 'spam again' }])
    })

    it('refuses a pubkey that is not 64 lowercase hex with invalid:', async () => {
      const r = await start()
      const a = await asAdmin(r, 'allowpubkey', ['npub1xyz'])
      expect(a.status).toBe(200)
      expect(errorPrefix(a)).toBe('invalid')
    })
  })

  describe('bans', () => {
    it('unbans a banned pubkey, which may then write again', async () => {
      const r = await start()
      const someone = makeKeys()
      await asAdmin(r, 'banpubkey', [someone.pubkey])
      const c = await client(r, WASPS)
      expect((await publish(c, fresh(someone))).prefix).toBe('blocked')
      expect((await asAdmin(r, 'unbanpubkey', [someone.pubkey])).json).toEqual({ result: true })
      expect((await asAdmin(r, 'listbannedpubkeys')).json.result).toEqual([])
      expect((await publish(c, fresh(someone))).accepted).toBe(true)
    })

    it('times a pubkey out: its socket closes with blocked:, the ban is listed with its end, and it writes again after it', async () => {
      const r = await start()
      const noisy = makeKeys()
      const c = await client(r, WASPS)
      expect((await auth(c, noisy, relayUrlOf(r, WASPS))).accepted).toBe(true)
      const before = Math.floor(Date.now() / 1000)
      expect((await asAdmin(r, 'timeoutpubkey', [noisy.pubkey, 2, 'cool off'])).json).toEqual({ result: true })
      const notice = await c.next((f) => f[0] === 'NOTICE')
      expect(prefixOf(String(notice[1]))).toBe('blocked')
      expect((await c.closed).code).toBe(1008)
      const [ban] = (await asAdmin(r, 'listbannedpubkeys')).json.result as { pubkey: string; reason: string; until: number }[]
      expect(ban).toMatchObject({ pubkey: noisy.pubkey, reason: 'cool off' })
      expect(ban!.until).toBeGreaterThanOrEqual(before + 2)
      expect(ban!.until).toBeLessThanOrEqual(before + 3)
      const again = await client(r, WASPS)
      expect((await publish(again, fresh(noisy))).prefix).toBe('blocked')
      // the ban list drops the ban once its end has passed: poll it rather than guess the clock
      const listed = await eventually(
        async () => ((await asAdmin(r, 'listbannedpubkeys')).json.result as unknown[]).length,
        (n) => n === 0,
        'the ban gone from the list',
        { timeoutMs: 5_000, intervalMs: 100 },
      )
      expect(listed).toBe(0)
      expect((await publish(again, fresh(noisy))).accepted).toBe(true)
    })

    it.each([
      ['0 seconds', 0],
      ['more than 30 days', 30 * 86_400 + 1],
      ['seconds as a string', '60'],
    ])('refuses a timeout of %s with invalid:', async (_, seconds) => {
      const r = await start()
      expect(errorPrefix(await asAdmin(r, 'timeoutpubkey', [makeKeys().pubkey, seconds]))).toBe('invalid')
      expect((await asAdmin(r, 'listbannedpubkeys')).json.result).toEqual([])
    })
  })

  describe('banned events', () => {
    it('removes a stored event from REQ results when banned, lists it, and unlists it after allowevent', async () => {
      const r = await start()
      const author = makeKeys()
      const c = await client(r, WASPS)
      const kept = await publishNew(c, author)
      const bad = await publishNew(c, author)
      const ids = [kept.event.id, bad.event.id]
      expect(idsOf(await reqEvents(c, [{ ids }])).sort()).toEqual([...ids].sort())
      expect((await asAdmin(r, 'banevent', [bad.event.id, 'doxxing'])).json).toEqual({ result: true })
      expect(idsOf(await reqEvents(c, [{ ids }]))).toEqual([kept.event.id])
      expect((await asAdmin(r, 'listbannedevents')).json.result).toEqual([{ id: bad.event.id, reason: 'doxxing' }])
      expect((await asAdmin(r, 'allowevent', [bad.event.id])).json).toEqual({ result: true })
      expect((await asAdmin(r, 'listbannedevents')).json.result).toEqual([])
    })

    it('bans an id the relay never stored (it is refused if it arrives later), and refuses a bad id with invalid:', async () => {
      const r = await start()
      const id = 'e'.repeat(64)
      expect((await asAdmin(r, 'banevent', [id])).json).toEqual({ result: true })
      expect((await asAdmin(r, 'listbannedevents')).json.result).toEqual([{ id, reason: '' }])
      expect(errorPrefix(await asAdmin(r, 'banevent', ['E'.repeat(64)]))).toBe('invalid')
    })
  })

  describe("the community's relay information (NIP-11)", () => {
    it("shows changerelayname, -description and -icon on that community's host only", async () => {
      const r = await start({ relayName: 'Hive', relayDescription: 'the whole hive' })
      expect((await asAdmin(r, 'changerelayname', ['Wasp Nest'])).json).toEqual({ result: true })
      expect((await asAdmin(r, 'changerelaydescription', ['Paper houses, sharp opinions.'])).json).toEqual({ result: true })
      expect((await asAdmin(r, 'changerelayicon', ['https://wasps.example/icon.png'])).json).toEqual({ result: true })
      expect(await nip11Of(r, WASPS)).toMatchObject({
        name: 'Wasp Nest',
        description: 'Paper houses, sharp opinions.',
        icon: 'https://wasps.example/icon.png',
      })
      const other = await nip11Of(r)
      expect(other).toMatchObject({ name: 'Hive', description: 'the whole hive' })
      expect(other.icon).toBeUndefined()
      expect((await callNip86(r, operator, 'listcommunities')).json.result).toContainEqual({
        id: 'wasps',
        name: 'Wasp Nest',
        hosts: [WASPS],
      })
    })

    it('falls back to the relay-wide description, and drops the icon, when set to an empty string', async () => {
      const r = await start({ relayDescription: 'the whole hive' })
      await asAdmin(r, 'changerelaydescription', ['ours'])
      await asAdmin(r, 'changerelayicon', ['http://wasps.example/icon.png'])
      await asAdmin(r, 'changerelaydescription', [''])
      await asAdmin(r, 'changerelayicon', [''])
      const info = await nip11Of(r, WASPS)
      expect(info.description).toBe('the whole hive')
      expect(info.icon).toBeUndefined()
    })

    it('renames the default community too (until then it shows the relay-wide name)', async () => {
      const r = await start({ relayName: 'Hive' })
      expect((await nip11Of(r)).name).toBe('Hive')
      await callNip86(r, operator, 'changerelayname', ['Loopback Hive'])
      expect((await nip11Of(r)).name).toBe('Loopback Hive')
    })

    it.each([
      ['an empty name', 'changerelayname', ['']],
      ['a 101-character name', 'changerelayname', ['n'.repeat(101)]],
      ['a 2,001-character description', 'changerelaydescription', ['d'.repeat(2_001)]],
      ['a javascript: icon', 'changerelayicon', ['javascript:alert(1)']],
      ['an icon that is not a URL', 'changerelayicon', ['icon.png']],
    ])('refuses %s with invalid: and changes nothing', async (_, method, params) => {
      const r = await start({ relayName: 'Hive', relayDescription: 'the whole hive' })
      expect(errorPrefix(await asAdmin(r, method, params))).toBe('invalid')
      const info = await nip11Of(r, WASPS)
      expect(info).toMatchObject({ name: 'wasps', description: 'the whole hive' })
      expect(info.icon).toBeUndefined()
    })
  })

  describe('kinds', () => {
    it('lists allowed and disallowed kinds, a later rule for a kind replacing the earlier one, and NIP-11 says writes are restricted', async () => {
      const r = await start()
      expect((await nip11Of(r, WASPS)).limitation.restricted_writes).toBe(false)
      for (const kind of [1, 7, 30023]) expect((await asAdmin(r, 'allowkind', [kind])).json).toEqual({ result: true })
      expect((await asAdmin(r, 'disallowkind', [7])).json).toEqual({ result: true })
      expect((await asAdmin(r, 'disallowkind', [4])).json).toEqual({ result: true })
      expect(((await asAdmin(r, 'listallowedkinds')).json.result as number[]).sort((a, b) => a - b)).toEqual([1, 30023])
      expect(((await asAdmin(r, 'listdisallowedkinds')).json.result as number[]).sort((a, b) => a - b)).toEqual([4, 7])
      expect((await nip11Of(r, WASPS)).limitation.restricted_writes).toBe(true)
      expect((await nip11Of(r)).limitation.restricted_writes).toBe(false)
      expect((await callNip86(r, operator, 'listallowedkinds')).json.result).toEqual([])
    })

    it.each([
      ['kind 65536', [65_536]],
      ['kind -1', [-1]],
      ['a kind as a string', ['1']],
    ])('refuses %s with invalid:', async (_, params) => {
      const r = await start()
      expect(errorPrefix(await asAdmin(r, 'allowkind', params))).toBe('invalid')
    })
  })

  describe('IP blocks', () => {
    it('lists blocked addresses in one spelling per address, with reasons, and unlists them after unblockip', async () => {
      const r = await start()
      expect((await asAdmin(r, 'blockip', ['203.0.113.7', 'scraper'])).json).toEqual({ result: true })
      expect((await asAdmin(r, 'blockip', ['2001:0DB8:0000:0000:0000:0000:0000:0001'])).json).toEqual({ result: true })
      expect((await asAdmin(r, 'blockip', ['::ffff:198.51.100.9', 'mapped'])).json).toEqual({ result: true })
      const listed = (await asAdmin(r, 'listblockedips')).json.result
      expect(listed).toEqual(
        expect.arrayContaining([
          { ip: '203.0.113.7', reason: 'scraper' },
          // an IPv6 address is blocked with its /64 (ipv6PrefixLength), as its budgets are counted
          { ip: '2001:db8::/64', reason: '' },
          { ip: '198.51.100.9', reason: 'mapped' },
        ]),
      )
      expect(listed).toHaveLength(3)
      // another spelling of a blocked address unblocks it
      expect((await asAdmin(r, 'unblockip', ['2001:db8:0::1'])).json).toEqual({ result: true })
      expect((await asAdmin(r, 'unblockip', ['203.0.113.7'])).json).toEqual({ result: true })
      expect((await asAdmin(r, 'listblockedips')).json.result).toEqual([{ ip: '198.51.100.9', reason: 'mapped' }])
    })

    it.each([
      ['a host name', 'relay.example'],
      ['an address with a port', '203.0.113.7:80'],
      ['a prefix longer than the address', '203.0.113.0/33'],
      ['a range with two prefixes', '203.0.113.0/24/8'],
      ['an octet over 255', '203.0.113.256'],
    ])('refuses %s with invalid:', async (_, ip) => {
      const r = await start()
      expect(errorPrefix(await asAdmin(r, 'blockip', [ip]))).toBe('invalid')
      expect((await asAdmin(r, 'listblockedips')).json.result).toEqual([])
    })
  })

  describe('setcommunitypolicy', () => {
    it("answers true, and NIP-11 on that community's host states that AUTH is required and writes are restricted", async () => {
      const r = await start()
      const a = await asAdmin(r, 'setcommunitypolicy', [{ readPolicy: 'authenticated', writePolicy: 'members', authRequired: true }])
      expect(a.json).toEqual({ result: true })
      expect((await nip11Of(r, WASPS)).limitation).toMatchObject({ auth_required: true, restricted_writes: true })
      expect((await nip11Of(r)).limitation).toMatchObject({ auth_required: false, restricted_writes: false })
      // a later call changes only the fields it names
      await asAdmin(r, 'setcommunitypolicy', [{ authRequired: false }])
      expect((await nip11Of(r, WASPS)).limitation).toMatchObject({ auth_required: false, restricted_writes: true })
    })

    it.each([
      ['an unknown policy', [{ readPolicy: 'friends' }]],
      ['no field', [{}]],
      ['authRequired as a string', [{ authRequired: 'yes' }]],
    ])('refuses %s with invalid:', async (_, params) => {
      const r = await start()
      expect(errorPrefix(await asAdmin(r, 'setcommunitypolicy', params))).toBe('invalid')
    })
  })
})

describe('the api rate limit on NIP-86 calls', () => {
  const relays = useRelays()
  const operator = makeKeys()

  it('answers 429 rate-limited: with Retry-After once a caller has spent its burst, and not another caller', async () => {
    const r = await relays.start({ operatorPubkeys: [operator.pubkey], rateLimits: { human: { api: { ratePerSecond: 0.01, burst: 3 } } } })
    for (let i = 0; i < 3; i++) expect((await callNip86(r, operator, 'supportedmethods')).status).toBe(200)
    const refused = await callNip86(r, operator, 'supportedmethods')
    expect(refused.status).toBe(429)
    expect(refused.json.result).toBeNull()
    expect(prefixOf(refused.json.error ?? '')).toBe('rate-limited')
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1)
    expect(refused.headers['content-type']).toMatch(/^application\/nostr\+json\+rpc/)
    // the budget is the caller's: a stranger is still told 403, not 429
    expect((await callNip86(r, makeKeys(), 'supportedmethods')).status).toBe(403)
  })

  it("gives an agent admin its tier's api budget", async () => {
    const agent = makeKeys()
    const r = await relays.start({
      communities: [{ id: 'wasps', hosts: [WASPS], admins: [agent.pubkey], agents: [{ pubkey: agent.pubkey, tier: 'platform' }] }],
      rateLimits: { human: { api: { ratePerSecond: 0.01, burst: 1 } }, agentPlatform: { api: { ratePerSecond: 0.01, burst: 4 } } },
    })
    const statuses: number[] = []
    for (let i = 0; i < 5; i++) statuses.push((await callNip86(r, agent, 'listagents', [], WASPS)).status)
    expect(statuses).toEqual([200, 200, 200, 200, 429])
  })
})
