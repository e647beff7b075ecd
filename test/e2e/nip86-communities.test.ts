import { describe, expect, it } from 'vitest'
import { prefixOf } from '../../src/protocols/reasons'
import { makeKeys } from '../support/events'
import { httpGet } from '../support/http'
import { callNip86 } from '../support/nip86-client'
import { auth, client, fresh, publish, relayUrlOf, reqEvents, until404 } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'

const errorPrefix = (a: { json: { error?: string } }) => prefixOf(a.json.error ?? '')
const NOSTR_JSON = { Accept: 'application/nostr+json' }

describe('community admins and the community methods over NIP-86', () => {
  const relays = useRelays()
  const operator = makeKeys()
  const waspAdmin = makeKeys()

  const start = (extra = {}) =>
    relays.start({
      operatorPubkeys: [operator.pubkey],
      communities: [
        { id: 'wasps', hosts: ['wasps.test'], admins: [waspAdmin.pubkey] },
        { id: 'bees', hosts: ['bees.test'] },
      ],
      ...extra,
    })

  it('lets an admin ban in their community, and answers 403 in another community and on operator methods', async () => {
    const r = await start()
    const bad = makeKeys()
    const ban = await callNip86(r, waspAdmin, 'banpubkey', [bad.pubkey, 'spam'], 'wasps.test')
    expect(ban.status).toBe(200)
    expect((await callNip86(r, waspAdmin, 'listbannedpubkeys', [], 'wasps.test')).json.result).toEqual([
      { pubkey: bad.pubkey, reason: 'spam' },
    ])
    const elsewhere = await callNip86(r, waspAdmin, 'banpubkey', [bad.pubkey], 'bees.test')
    expect(elsewhere.status).toBe(403)
    expect(errorPrefix(elsewhere)).toBe('restricted')
    for (const [method, params] of [
      ['createcommunity', ['hornets', ['hornets.test']]],
      ['archivecommunity', ['bees']],
      ['listcommunities', []],
    ] as const) {
      const a = await callNip86(r, waspAdmin, method, [...params], 'wasps.test')
      expect(a.status).toBe(403)
      expect(errorPrefix(a)).toBe('restricted')
    }
    expect((await callNip86(r, operator, 'listcommunities')).json.result).not.toContainEqual(expect.objectContaining({ id: 'hornets' }))
  })

  it('creates a community whose host answers NIP-11 and WebSocket at once, and lists it', async () => {
    const r = await start()
    const hornetAdmin = makeKeys()
    const created = await callNip86(r, operator, 'createcommunity', ['hornets', ['hornets.test'], 'Hornet Nest', [hornetAdmin.pubkey]])
    expect(created.json).toEqual({ result: true })
    const info = await httpGet(r, '/', { ...NOSTR_JSON, Host: `hornets.test:${r.port}` })
    expect(info.status).toBe(200)
    expect(JSON.parse(info.body).name).toBe('Hornet Nest')
    const c = await client(r, 'hornets.test')
    expect((await publish(c, fresh(makeKeys()))).accepted).toBe(true)
    expect((await callNip86(r, operator, 'listcommunities')).json.result).toContainEqual({
      id: 'hornets',
      name: 'Hornet Nest',
      hosts: ['hornets.test'],
    })
    // its admins manage it from the moment it exists
    expect((await callNip86(r, hornetAdmin, 'listagents', [], 'hornets.test')).json).toEqual({ result: [] })
  })

  it('refuses createcommunity with invalid: for a host already bound or an id already taken', async () => {
    const r = await start()
    const hostTaken = await callNip86(r, operator, 'createcommunity', ['hornets', ['bees.test']])
    expect(hostTaken.status).toBe(200)
    expect(errorPrefix(hostTaken)).toBe('invalid')
    expect(errorPrefix(await callNip86(r, operator, 'createcommunity', ['bees', ['other.test']]))).toBe('invalid')
    expect(errorPrefix(await callNip86(r, operator, 'createcommunity', ['Bad Id', ['x.test']]))).toBe('invalid')
  })

  it('archives a community: its sockets close, its host answers 404, and it is no longer listed', async () => {
    const r = await start()
    const c = await client(r, 'bees.test')
    expect((await callNip86(r, operator, 'archivecommunity', ['bees'])).json).toEqual({ result: true })
    expect((await c.closed).code).toBe(1008)
    expect(await until404(r, 'bees.test')).toBe(true)
    expect((await httpGet(r, '/', { ...NOSTR_JSON, Host: `bees.test:${r.port}` })).status).toBe(404)
    const ids = ((await callNip86(r, operator, 'listcommunities')).json.result as { id: string }[]).map((x) => x.id)
    expect(ids).toEqual(['default', 'wasps'])
    expect(errorPrefix(await callNip86(r, operator, 'archivecommunity', ['bees']))).toBe('invalid')
  })

  it("gives an agent its tier's event budget once an admin sets it, even with a principal already running", async () => {
    const r = await start({
      rateLimits: { human: { events: { ratePerSecond: 0.001, burst: 1 } }, agentPlatform: { events: { ratePerSecond: 0.001, burst: 3 } } },
    })
    const agent = makeKeys()
    const a = await client(r, 'wasps.test')
    await auth(a, agent, relayUrlOf(r, 'wasps.test'))
    await reqEvents(a, [{ kinds: [1], limit: 1 }]) // its principal now runs with the human tier
    expect((await callNip86(r, waspAdmin, 'setagenttier', [agent.pubkey, 'platform'], 'wasps.test')).json).toEqual({ result: true })
    const oks = [await publish(a, fresh(agent)), await publish(a, fresh(agent)), await publish(a, fresh(agent))]
    expect(oks.map((o) => o.accepted)).toEqual([true, true, true])
    expect((await publish(a, fresh(agent))).prefix).toBe('rate-limited')
  })

  it('lists the agents set, takes one off with tier none, and refuses a bad tier with invalid:', async () => {
    const r = await start()
    const [one, two] = [makeKeys(), makeKeys()]
    await callNip86(r, waspAdmin, 'setagenttier', [one.pubkey, 'standard'], 'wasps.test')
    await callNip86(r, waspAdmin, 'setagenttier', [two.pubkey, 'elevated'], 'wasps.test')
    await callNip86(r, waspAdmin, 'setagenttier', [one.pubkey, 'platform'], 'wasps.test')
    const listed = (await callNip86(r, waspAdmin, 'listagents', [], 'wasps.test')).json.result
    expect(listed).toEqual(
      expect.arrayContaining([
        { pubkey: one.pubkey, tier: 'platform' },
        { pubkey: two.pubkey, tier: 'elevated' },
      ]),
    )
    expect(listed).toHaveLength(2)
    await callNip86(r, waspAdmin, 'setagenttier', [one.pubkey, 'none'], 'wasps.test')
    expect((await callNip86(r, operator, 'listagents', [], 'wasps.test')).json.result).toEqual([{ pubkey: two.pubkey, tier: 'elevated' }])
    expect((await callNip86(r, operator, 'listagents', [], 'bees.test')).json.result).toEqual([])
    expect(errorPrefix(await callNip86(r, waspAdmin, 'setagenttier', [one.pubkey, 'god'], 'wasps.test'))).toBe('invalid')
  })
})
