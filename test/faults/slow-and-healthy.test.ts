import { describe, expect, it } from 'vitest'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { makeKeys, signEvent, type TestKeys } from '../support/events'
import { eventually } from '../support/eventually'
import { metric } from '../support/metrics'
import type { TestRelay } from '../support/relay'
import { client, publish, reqEvents } from '../support/relay-client'
import { useCluster, useRelays } from '../support/relay-fixtures'
import type { TestClient } from '../support/ws-client'

/**
 * A real client that stops reading (its TCP socket paused: the kernel buffers fill, then ws's, then the
 * relay's outbound queue) beside clients that keep reading. architecture §6.6: the stuck one is closed with a reason
 * and counted, never silently skipped; the others get every event. test/e2e/slow-consumer.test.ts covers the
 * grace-period close on one node; these cover the hard bound and the cross-node fan-out path.
 */

type RawSocket = { _socket: { pause(): void; resume(): void } }
const socketOf = (c: TestClient) => (c.ws as unknown as RawSocket)._socket
const BIG = 'x'.repeat(30_000)
const seqOf = (f: unknown[]) => Number((f[2] as NostrEvent).content.split(' ')[0])
const eventSeqs = (c: TestClient, subId: string) => c.frames.filter((f) => f[0] === 'EVENT' && f[1] === subId).map(seqOf)
const inOrder = (n: number) => Array.from({ length: n }, (_, i) => i)

/**
 * Publishes numbered 30 KB events until the relay `watched` counts a slow-consumer close (bounded: a few MB
 * of kernel buffers fill first). Resolves with how many were published.
 */
async function floodUntilSlowClose(pub: TestClient, keys: TestKeys, watched: TestRelay, max = 1_000): Promise<number> {
  let sent = 0
  while (sent < max) {
    const ok = await publish(pub, signEvent(keys, { content: `${sent++} ${BIG}` }))
    if (!ok.accepted) throw new Error(`publish ${sent - 1} refused: ${ok.message}`)
    if (sent % 10 === 0 && (await metric(watched, 'apiary_slow_consumer_closes_total')) >= 1) return sent
  }
  throw new Error(`no slow-consumer close after ${max} events`)
}

async function healthyReader(r: TestRelay, keys: TestKeys, subId: string, host?: string): Promise<TestClient> {
  const c = await client(r, host)
  await reqEvents(c, [{ authors: [keys.pubkey] }], subId)
  return c
}

describe('a paused reader beside healthy ones', () => {
  const relays = useRelays()

  it('closes a paused reader at once, without waiting out slowConsumerGraceMs, when its backlog passes 4 × maxPendingOutboundBytes; healthy readers get every event in order, before and after', async () => {
    // a grace longer than the test: only the hard bound (4 × 100 KB) can close it
    const r = await relays.start({ limits: { maxPendingOutboundBytes: 100_000, slowConsumerGraceMs: 60_000 } })
    const keys = makeKeys()
    const slow = await healthyReader(r, keys, 'feed')
    const healthy = await healthyReader(r, keys, 'feed')
    const wide = await client(r)
    await reqEvents(wide, [{ kinds: [1] }], 'everything')
    socketOf(slow).pause()
    const pub = await client(r)
    const startedMs = performance.now()
    const sent = await floodUntilSlowClose(pub, keys, r)
    expect(performance.now() - startedMs).toBeLessThan(30_000)
    expect(await metric(r, 'apiary_slow_consumer_closes_total')).toBe(1)

    // fan-out goes on for the others after the close
    for (let i = sent; i < sent + 5; i++) expect((await publish(pub, signEvent(keys, { content: `${i} ${BIG}` }))).accepted).toBe(true)
    const total = sent + 5
    await healthy.next((f) => f[0] === 'EVENT' && seqOf(f) === total - 1)
    await wide.next((f) => f[0] === 'EVENT' && seqOf(f) === total - 1)
    expect(eventSeqs(healthy, 'feed')).toEqual(inOrder(total))
    expect(eventSeqs(wide, 'everything')).toEqual(inOrder(total))

    socketOf(slow).resume()
    const closed = await slow.closed
    expect(closed.code).toBe(1008)
    expect(closed.reason).toMatch(/^error: /)
    // what it got before the close is an in-order prefix: nothing skipped while it believed it was subscribed
    const got = eventSeqs(slow, 'feed')
    expect(got).toEqual(inOrder(got.length))
    expect(got.length).toBeLessThan(total)
    for (const c of [healthy, wide, pub]) expect(c.ws.readyState).toBe(c.ws.OPEN)
    expect(await metric(r, 'apiary_slow_consumer_closes_total')).toBe(1)
    // the community forgot its subscription once the socket closed
    const stats = await eventually(
      () => r.relay.stats('default'),
      (s) => s.subscriptions === 2,
      'the slow subscription forgotten',
      { intervalMs: 100 },
    )
    expect(stats.subscriptions).toBe(2)
  })

  // The limits allow pages far over the hard bound (maxLimit × maxEventBytes per filter, 500 × 128 KiB): a page
  // a reader within its bound asked for counts towards the hard bound only past another 4× (pushPage). Here:
  // bound 50 KB (hard 200 KB), a 300 KB page.
  it('serves a REQ page larger than 4 × maxPendingOutboundBytes to a client that keeps reading', async () => {
    const r = await relays.start({ limits: { maxPendingOutboundBytes: 50_000 } })
    const keys = makeKeys()
    const pub = await client(r)
    for (let i = 0; i < 10; i++) expect((await publish(pub, signEvent(keys, { content: `${i} ${BIG}` }))).accepted).toBe(true)
    const reader = await client(r)
    reader.send(['REQ', 'page', { authors: [keys.pubkey] }])
    const end = await Promise.race([
      reader.next((f) => f[0] === 'EOSE' && f[1] === 'page', 10_000),
      reader.closed.then((c) => ['CLOSE', c.code]),
    ])
    expect(end[0]).toBe('EOSE')
    expect(eventSeqs(reader, 'page')).toHaveLength(10)
  })

  it('lets a page take a reader to twice the hard bound at most: a 12 MB page to a reader that does not read closes it at once', async () => {
    // a page bigger than the kernel's loopback buffers, so the relay keeps part of it; hard bound 4 × 500 KB
    const r = await relays.start({ limits: { maxPendingOutboundBytes: 500_000, slowConsumerGraceMs: 60_000 } })
    const keys = makeKeys()
    const pub = await client(r)
    const HUGE = 'x'.repeat(60_000)
    for (let i = 0; i < 200; i++) expect((await publish(pub, signEvent(keys, { content: `${i} ${HUGE}` }))).accepted).toBe(true)
    const reader = await client(r)
    socketOf(reader).pause()
    // a 12 MB page, six times the hard bound: past the page allowance (another 4 × the bound) as well; the
    // kernel's loopback buffers take a few MB of it, the rest would stay in the relay
    reader.send(['REQ', 'page', { authors: [keys.pubkey], limit: 200 }])
    const closes = await eventually(
      () => metric(r, 'apiary_slow_consumer_closes_total'),
      (n) => n === 1,
      'one slow consumer closed',
      { timeoutMs: 10_000, intervalMs: 100 },
    )
    expect(closes).toBe(1)
    socketOf(reader).resume()
    expect((await reader.closed).code).toBeGreaterThanOrEqual(1006)
  }, 30_000)
})

describe('a paused reader on another node than the publisher', () => {
  const relays = useRelays()
  const cluster = useCluster(relays)

  it('closes the paused reader on node B with 1008 while a healthy reader on B gets every event published on A, in order', async () => {
    const {
      host,
      nodes: [a, b],
    } = await cluster.nodes(2, { limits: { maxPendingOutboundBytes: 200_000, slowConsumerGraceMs: 300 } })
    const keys = makeKeys()
    const slow = await healthyReader(b!, keys, 'remote', host)
    const healthy = await healthyReader(b!, keys, 'remote', host)
    const pub = await client(a!, host)
    // live delivery A → B is up before the pause: a first event crosses
    expect((await publish(pub, signEvent(keys, { content: `0 ${BIG}` }))).accepted).toBe(true)
    await slow.next((f) => f[0] === 'EVENT' && seqOf(f) === 0)
    await healthy.next((f) => f[0] === 'EVENT' && seqOf(f) === 0)
    socketOf(slow).pause()

    let sent = 1
    while (sent < 1_000) {
      const ok = await publish(pub, signEvent(keys, { content: `${sent++} ${BIG}` }))
      expect(ok.accepted).toBe(true)
      if (sent % 10 === 0 && (await metric(b!, 'apiary_slow_consumer_closes_total')) >= 1) break
    }
    expect(await metric(b!, 'apiary_slow_consumer_closes_total')).toBe(1)
    expect(await metric(a!, 'apiary_slow_consumer_closes_total')).toBe(0)
    await healthy.next((f) => f[0] === 'EVENT' && seqOf(f) === sent - 1, 10_000)
    expect(eventSeqs(healthy, 'remote')).toEqual(inOrder(sent))

    socketOf(slow).resume()
    const closed = await slow.closed
    expect(closed.code).toBe(1008)
    const got = eventSeqs(slow, 'remote')
    expect(got).toEqual(inOrder(got.length))
    expect(healthy.ws.readyState).toBe(healthy.ws.OPEN)
  }, 40_000)
})
