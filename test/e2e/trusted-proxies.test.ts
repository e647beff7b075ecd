import { describe, expect, it } from 'vitest'
import type { ConfigInput } from '../../src/infra/config'
import { prefixOf } from '../../src/protocols/reasons'
import { makeKeys } from '../support/events'
import { managementUrl, nip98Header, postNip86 } from '../support/nip86-client'
import { upgradeStatus, viaProxy } from '../support/per-ip-clients'
import type { TestRelay } from '../support/relay'
import { auth, fresh, publish, relayUrlOf } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'
import { connect } from '../support/ws-client'

const XFF = (value: string) => ({ 'X-Forwarded-For': value })
const ONE_CONNECTION = { connectionsPerIp: { ratePerSecond: 0.001, burst: 1 } }

describe('client addresses behind a trusted reverse proxy', () => {
  const relays = useRelays()
  const operator = makeKeys()
  const start = (extra: ConfigInput = {}) =>
    relays.start({ trustedProxies: ['127.0.0.1', '10.0.0.0/8'], operatorPubkeys: [operator.pubkey], ...extra })

  let calls = 0
  /** a NIP-86 call from the proxy on behalf of `forwardedFor` (unique body: two equal auth events would be a replay) */
  const callAs = (r: TestRelay, forwardedFor: string | undefined, method: string, params: unknown[] = []) => {
    const body = JSON.stringify({ id: ++calls, method, params })
    return postNip86(r, body, nip98Header(operator, managementUrl(r), body), '127.0.0.1', r.port, forwardedFor ? XFF(forwardedFor) : {})
  }

  it('gives two forwarded clients their own per-IP connection budget', async () => {
    const r = await start({ rateLimits: ONE_CONNECTION })
    expect(await upgradeStatus(r, XFF('198.51.100.1'))).toBe(101)
    expect(await upgradeStatus(r, XFF('198.51.100.1'))).toBe(429)
    expect(await upgradeStatus(r, XFF('198.51.100.2'))).toBe(101)
    // the proxy's own address is one more client, not the sum of them
    expect(await upgradeStatus(r)).toBe(101)
  })

  it('counts a client by the right-most untrusted hop: what it writes further left buys no fresh budget', async () => {
    const r = await start({ rateLimits: ONE_CONNECTION })
    expect(await upgradeStatus(r, XFF('198.51.100.1, 10.0.0.2'))).toBe(101)
    expect(await upgradeStatus(r, XFF('6.6.6.6, 198.51.100.1'))).toBe(429)
    expect(await upgradeStatus(r, XFF('7.7.7.7, 198.51.100.1, 10.9.9.9'))).toBe(429)
  })

  it('charges unauthenticated events to the forwarded client, not to the proxy', async () => {
    const r = await start({ rateLimits: { human: { events: { ratePerSecond: 0.001, burst: 1 } } } })
    const keys = makeKeys()
    expect((await publish(await viaProxy(r, '198.51.100.1'), fresh(keys))).accepted).toBe(true)
    expect(await publish(await viaProxy(r, '198.51.100.1'), fresh(keys))).toMatchObject({ accepted: false, prefix: 'rate-limited' })
    expect((await publish(await viaProxy(r, '198.51.100.2'), fresh(keys))).accepted).toBe(true)
  })

  it('refuses only the blocked forwarded address with 403 after blockip, in any spelling', async () => {
    const r = await start()
    expect((await callAs(r, undefined, 'blockip', ['198.51.100.7', 'scraper'])).json).toEqual({ result: true })
    expect((await callAs(r, undefined, 'blockip', ['2001:db8::7'])).json).toEqual({ result: true })
    expect(await upgradeStatus(r, XFF('198.51.100.7'))).toBe(403)
    expect(await upgradeStatus(r, XFF('::ffff:198.51.100.7'))).toBe(403)
    expect(await upgradeStatus(r, XFF('2001:DB8:0:0::0007'))).toBe(403)
    expect(await upgradeStatus(r, XFF('1.2.3.4, 198.51.100.7, 10.0.0.2'))).toBe(403)
    expect(await upgradeStatus(r, XFF('198.51.100.8'))).toBe(101)
    expect(await upgradeStatus(r, XFF('198.51.100.7, 198.51.100.8'))).toBe(101)
    // the proxy itself is not blocked: everybody else behind it still gets in
    expect(await upgradeStatus(r)).toBe(101)
  })

  it('blocks a CIDR range: new sockets from it 403, its open sockets closed with a blocked: NOTICE, its NIP-86 calls 403', async () => {
    const r = await start()
    const inside = await viaProxy(r, '198.51.100.20')
    const outside = await viaProxy(r, '198.51.101.20')
    expect((await callAs(r, undefined, 'blockip', ['198.51.100.0/24', 'scrapers'])).json).toEqual({ result: true })
    const notice = await inside.next((f) => f[0] === 'NOTICE')
    expect(prefixOf(String(notice[1]))).toBe('blocked')
    expect((await inside.closed).code).toBe(1008)
    expect(await upgradeStatus(r, XFF('198.51.100.9'))).toBe(403)
    expect(await upgradeStatus(r, XFF('198.51.101.9'))).toBe(101)
    const call = await callAs(r, '198.51.100.5', 'supportedmethods')
    expect(call.status).toBe(403)
    expect(prefixOf(call.json.error ?? '')).toBe('blocked')
    expect((await callAs(r, undefined, 'listblockedips')).json).toEqual({ result: [{ ip: '198.51.100.0/24', reason: 'scrapers' }] })
    // the socket outside the range is still served
    outside.send(['REQ', 's', { limit: 1 }])
    expect((await outside.next((f) => f[0] === 'EOSE'))[1]).toBe('s')
    expect((await callAs(r, undefined, 'unblockip', ['198.51.100.0/24'])).json).toEqual({ result: true })
    expect(await upgradeStatus(r, XFF('198.51.100.9'))).toBe(101)
  })

  it('blocks the whole /64 of an IPv6 address, as its budgets are counted', async () => {
    const r = await start()
    expect((await callAs(r, undefined, 'blockip', ['2001:db8:aa:bb::1'])).json).toEqual({ result: true })
    expect(await upgradeStatus(r, XFF('2001:db8:aa:bb:1:2:3:4'))).toBe(403)
    expect(await upgradeStatus(r, XFF('2001:db8:aa:bc::1'))).toBe(101)
    expect((await callAs(r, undefined, 'listblockedips')).json).toEqual({ result: [{ ip: '2001:db8:aa:bb::/64', reason: '' }] })
    expect((await callAs(r, undefined, 'unblockip', ['2001:db8:aa:bb::99'])).json).toEqual({ result: true })
    expect(await upgradeStatus(r, XFF('2001:db8:aa:bb::1'))).toBe(101)
  })

  it('gives forwarded NIP-86 callers their own per-IP api budget', async () => {
    const r = await start({ rateLimits: { apiPerIp: { ratePerSecond: 0.001, burst: 1 } } })
    expect((await callAs(r, '198.51.100.1', 'supportedmethods')).status).toBe(200)
    const refused = await callAs(r, '198.51.100.1', 'supportedmethods')
    expect(refused.status).toBe(429)
    expect(refused.headers['retry-after']).toMatch(/^\d+$/)
    expect(prefixOf(refused.json.error ?? '')).toBe('rate-limited')
    expect((await callAs(r, '198.51.100.2', 'supportedmethods')).status).toBe(200)
  })

  it('charges NIP-86 calls from two addresses of one IPv6 /64 to one per-IP budget', async () => {
    const r = await start({ rateLimits: { apiPerIp: { ratePerSecond: 0.001, burst: 1 } } })
    expect((await callAs(r, '2001:db8:aa:bb::1', 'supportedmethods')).status).toBe(200)
    expect((await callAs(r, '2001:db8:aa:bb::2', 'supportedmethods')).status).toBe(429)
    expect((await callAs(r, '2001:db8:aa:bc::1', 'supportedmethods')).status).toBe(200)
  })

  it('honours X-Forwarded-Proto from the trusted proxy in the NIP-42 relay URL', async () => {
    const r = await start({ trustForwardedProto: true })
    const c = await connect(r.url, { headers: { 'X-Forwarded-Proto': 'https', ...XFF('198.51.100.1') } })
    expect((await auth(c, makeKeys(), `wss://127.0.0.1:${r.port}`)).accepted).toBe(true)
  })
})

describe('a spoofed X-Forwarded-For from a peer that is not a trusted proxy', () => {
  const relays = useRelays()
  const operator = makeKeys()

  let calls = 0
  const block = async (r: TestRelay, ip: string) => {
    const body = JSON.stringify({ id: ++calls, method: 'blockip', params: [ip] })
    expect((await postNip86(r, body, nip98Header(operator, managementUrl(r), body))).json).toEqual({ result: true })
  }

  it.each<[string, string[]]>([
    ['with no trusted proxies', []],
    ['with trusted proxies that do not include the peer', ['10.0.0.0/8', '2001:db8::/32']],
  ])('changes no per-IP budget %s', async (_, trustedProxies) => {
    const r = await relays.start({ trustedProxies, rateLimits: ONE_CONNECTION })
    expect(await upgradeStatus(r, XFF('198.51.100.1'))).toBe(101)
    expect(await upgradeStatus(r, XFF('198.51.100.2'))).toBe(429)
    expect(await upgradeStatus(r)).toBe(429)
  })

  it.each<[string, string[]]>([
    ['with no trusted proxies', []],
    ['with trusted proxies that do not include the peer', ['10.0.0.0/8']],
  ])('neither escapes nor causes a blockip %s', async (_, trustedProxies) => {
    const r = await relays.start({ trustedProxies, operatorPubkeys: [operator.pubkey] })
    await block(r, '198.51.100.7')
    expect(await upgradeStatus(r, XFF('198.51.100.7'))).toBe(101)
    await block(r, '127.0.0.1')
    expect(await upgradeStatus(r, XFF('198.51.100.8'))).toBe(403)
  })

  it('gets no say in the NIP-42 relay URL once trusted proxies are set, even with trustForwardedProto', async () => {
    const r = await relays.start({ trustForwardedProto: true, trustedProxies: ['10.0.0.0/8'] })
    const spoofed = await connect(r.url, { headers: { 'X-Forwarded-Proto': 'https' } })
    expect(await auth(spoofed, makeKeys(), `wss://127.0.0.1:${r.port}`)).toMatchObject({ accepted: false, prefix: 'invalid' })
    const plain = await connect(r.url, { headers: { 'X-Forwarded-Proto': 'https' } })
    expect((await auth(plain, makeKeys(), relayUrlOf(r))).accepted).toBe(true)
  })

  it('keeps trustForwardedProto meaning "any peer" while no trusted proxy is set', async () => {
    const r = await relays.start({ trustForwardedProto: true })
    const c = await connect(r.url, { headers: { 'X-Forwarded-Proto': 'https' } })
    expect((await auth(c, makeKeys(), `wss://127.0.0.1:${r.port}`)).accepted).toBe(true)
  })
})
