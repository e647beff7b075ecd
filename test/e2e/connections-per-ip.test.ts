import { connect as connectTcp } from 'node:net'
import { describe, expect, it } from 'vitest'
import { eventually } from '../support/eventually'
import { labelledMetric } from '../support/metrics'
import { testClientIp, upgradeStatus, viaProxy } from '../support/per-ip-clients'
import type { TestRelay } from '../support/relay'
import { useCluster, useRelays } from '../support/relay-fixtures'
import { connect, type TestClient } from '../support/ws-client'

const LIMIT = 3
const refusedTooMany = (r: TestRelay) => labelledMetric(r, 'apiary_connections_refused_total', { reason: 'too-many-connections' })

/** Until the relay has seen the close (the slot is given back when the server's socket closes). */
async function closeAndWait(c: TestClient): Promise<void> {
  c.close()
  await c.closed
}

/** An upgrade request ws refuses after our gates admitted it (no Sec-WebSocket-Key): ws answers 400. */
function brokenUpgrade(r: TestRelay, headers: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connectTcp(r.port, '127.0.0.1', () => {
      const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`)
      socket.write(
        `GET / HTTP/1.1\r\nHost: 127.0.0.1:${r.port}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n${extra.join('')}\r\n`,
      )
    })
    let answer = ''
    socket.setEncoding('utf8')
    socket.on('data', (d: string) => {
      answer += d
    })
    socket.on('close', () => resolve(answer.split('\r\n')[0] ?? ''))
    socket.on('error', reject)
  })
}

describe('concurrent connections per IP (one node)', () => {
  const relays = useRelays()

  it('admits the limit, refuses one more with HTTP 429 and counts it as too-many-connections', async () => {
    const r = await relays.start({ limits: { maxConnectionsPerIp: LIMIT } })
    for (let i = 0; i < LIMIT; i++) await connect(r.url)
    expect(await upgradeStatus(r)).toBe(429)
    expect(await refusedTooMany(r)).toBe(1)
  })

  it('frees the slot once a socket closes', async () => {
    const r = await relays.start({ limits: { maxConnectionsPerIp: LIMIT } })
    const open = [await connect(r.url), await connect(r.url), await connect(r.url)]
    expect(await upgradeStatus(r)).toBe(429)
    await closeAndWait(open[0]!)
    expect(
      await eventually(
        () => upgradeStatus(r),
        (s) => s === 101,
        'an upgrade accepted again',
        { intervalMs: 100 },
      ),
    ).toBe(101)
    // the probe above closed again too (the relay notices a moment later): exactly one slot is free, not more
    expect(
      await eventually(
        () =>
          connect(r.url).then(
            () => 'in',
            () => 'refused',
          ),
        (s) => s === 'in',
        'a connection let in',
        { intervalMs: 100 },
      ),
    ).toBe('in')
    expect(await upgradeStatus(r)).toBe(429)
  })

  it('gives back the slot of an upgrade that fails after admission (ws refuses the handshake)', async () => {
    const r = await relays.start({ limits: { maxConnectionsPerIp: 1 } })
    for (let i = 0; i < 3; i++) expect(await brokenUpgrade(r)).toMatch(/^HTTP\/1\.1 400/)
    expect(
      await eventually(
        () => upgradeStatus(r),
        (s) => s === 101,
        'an upgrade accepted again',
        { intervalMs: 100 },
      ),
    ).toBe(101)
    expect(await refusedTooMany(r)).toBe(0)
  })

  it('does not take a slot for an upgrade refused earlier (unknown host)', async () => {
    const r = await relays.start({ limits: { maxConnectionsPerIp: 1 } })
    for (let i = 0; i < 3; i++) expect(await upgradeStatus(r, { Host: 'nowhere.test' })).toBe(404)
    const held = await connect(r.url)
    expect(await upgradeStatus(r)).toBe(429)
    await closeAndWait(held)
  })

  it('counts each client behind a trusted proxy on its own', async () => {
    const r = await relays.start({ limits: { maxConnectionsPerIp: 1 }, trustedProxies: ['127.0.0.1'] })
    await viaProxy(r, '198.51.100.1')
    expect(await upgradeStatus(r, { 'X-Forwarded-For': '198.51.100.1' })).toBe(429)
    expect(await upgradeStatus(r, { 'X-Forwarded-For': '198.51.100.2' })).toBe(101)
  })
})

describe('IPv6 clients: one principal per network (ipv6PrefixLength)', () => {
  const relays = useRelays()
  const behindProxy = { trustedProxies: ['127.0.0.1'] }

  it('counts two addresses of one /64 against one connection cap, and another /64 on its own', async () => {
    const r = await relays.start({ limits: { maxConnectionsPerIp: 1 }, ...behindProxy })
    await viaProxy(r, '2001:db8:aa:bb::1')
    expect(await upgradeStatus(r, { 'X-Forwarded-For': '2001:db8:aa:bb:ffff:1:2:3' })).toBe(429)
    expect(await refusedTooMany(r)).toBe(1)
    expect(await upgradeStatus(r, { 'X-Forwarded-For': '2001:db8:aa:bc::1' })).toBe(101)
  })

  it('charges the addresses of one /64 to one connection-rate budget', async () => {
    const r = await relays.start({ rateLimits: { connectionsPerIp: { ratePerSecond: 0.001, burst: 2 } }, ...behindProxy })
    expect(await upgradeStatus(r, { 'X-Forwarded-For': '2001:db8:aa:bb::1' })).toBe(101)
    expect(await upgradeStatus(r, { 'X-Forwarded-For': '2001:db8:aa:bb::2' })).toBe(101)
    expect(await upgradeStatus(r, { 'X-Forwarded-For': '2001:db8:aa:bb::3' })).toBe(429)
  })

  it('keys each address on its own with ipv6PrefixLength 128', async () => {
    const r = await relays.start({ limits: { maxConnectionsPerIp: 1 }, ipv6PrefixLength: 128, ...behindProxy })
    await viaProxy(r, '2001:db8:aa:bb::1')
    expect(await upgradeStatus(r, { 'X-Forwarded-For': '2001:db8:aa:bb::2' })).toBe(101)
  })
})

describe('concurrent connections per IP (a cluster)', () => {
  const relays = useRelays()
  const cluster = useCluster(relays)
  // every node and test file shares one Redis: the test's clients come, through the "proxy" on 127.0.0.1,
  // from an address nobody else uses, so the count under test is the test's own
  const config = { limits: { maxConnectionsPerIp: 2 }, trustedProxies: ['127.0.0.1'] }

  it('shares one count between two nodes: the limit holds across them, and a close on one frees a slot on the other', async () => {
    const { host, nodes } = await cluster.nodes(2, config)
    const [a, b] = nodes as [TestRelay, TestRelay]
    const ip = testClientIp()
    const headers = (r: TestRelay) => ({ 'X-Forwarded-For': ip, Host: `${host}:${r.port}` })
    const onA = await viaProxy(a, ip, host)
    await viaProxy(b, ip, host)
    expect(await upgradeStatus(a, headers(a))).toBe(429)
    expect(await upgradeStatus(b, headers(b))).toBe(429)
    expect((await refusedTooMany(a)) + (await refusedTooMany(b))).toBe(2)
    // another client behind the same proxy is unaffected
    expect(await upgradeStatus(b, { 'X-Forwarded-For': testClientIp(), Host: `${host}:${b.port}` })).toBe(101)
    await closeAndWait(onA)
    expect(
      await eventually(
        () => upgradeStatus(b, headers(b)),
        (s) => s === 101,
        'an upgrade through node B accepted again',
        { intervalMs: 100 },
      ),
    ).toBe(101)
  })
})
