import { describe, expect, it } from 'vitest'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { makeKeys, signEvent } from '../support/events'
import { metric } from '../support/metrics'
import { client, idsOf, publish, publishNew, reqEvents } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'
import type { TestClient } from '../support/ws-client'

type RawSocket = { _socket: { pause(): void; resume(): void } }
const socketOf = (c: TestClient) => (c.ws as unknown as RawSocket)._socket

describe('slow consumers', () => {
  const relays = useRelays()

  it('closes a subscriber that stops reading with 1008 and counts it; readers that keep up stay open', async () => {
    // The bound must exceed one frame: a ~30 KB event, 200 KB of backlog allowed.
    const r = await relays.start({ limits: { maxPendingOutboundBytes: 200_000, slowConsumerGraceMs: 200 } })
    const keys = makeKeys()
    const slow = await client(r)
    const healthy = await client(r)
    await reqEvents(slow, [{ authors: [keys.pubkey] }], 'flood')
    await reqEvents(healthy, [{ authors: [keys.pubkey] }], 'flood')
    // stop reading: the kernel socket buffers fill, then ws's buffer, then the relay's outbound queue
    socketOf(slow).pause()
    const pub = await client(r)
    const big = 'x'.repeat(30_000)
    let sent = 0
    // bounded: a few MB of kernel buffers must fill first (about 140 events here)
    while (sent < 1_000) {
      const ok = await publish(pub, signEvent(keys, { content: `${sent++} ${big}` }))
      expect(ok.accepted).toBe(true)
      if (sent % 10 === 0 && (await metric(r, 'apiary_slow_consumer_closes_total')) >= 1) break
    }
    expect(await metric(r, 'apiary_slow_consumer_closes_total')).toBe(1)
    socketOf(slow).resume()
    const closed = await slow.closed
    expect(closed.code).toBe(1008)
    expect(closed.reason).toMatch(/^error: /)
    // what it did receive is an in-order prefix of what was published: nothing skipped silently
    const got = slow.frames.filter((f) => f[0] === 'EVENT').map((f) => Number((f[2] as NostrEvent).content.split(' ')[0]))
    expect(got).toEqual(got.map((_, i) => i))
    // the reader that kept up got everything and is still open, and so is the publisher
    await healthy.next((f) => f[0] === 'EVENT' && (f[2] as NostrEvent).content.startsWith(`${sent - 1} `))
    expect(healthy.frames.filter((f) => f[0] === 'EVENT')).toHaveLength(sent)
    expect(healthy.ws.readyState).toBe(healthy.ws.OPEN)
    expect(pub.ws.readyState).toBe(pub.ws.OPEN)
  })

  // One REQ page may take a healthy reader over the bound for a moment: only staying over it closes.
  it('serves a stored page bigger than maxPendingOutboundBytes to a client that keeps reading', async () => {
    const r = await relays.start({ limits: { maxPendingOutboundBytes: 100_000 } })
    const keys = makeKeys()
    const pub = await client(r)
    const sent = []
    for (let i = 0; i < 5; i++) sent.push(await publishNew(pub, keys, { content: `${i} ${'y'.repeat(30_000)}` }))
    const reader = await client(r)
    reader.send(['REQ', 'page', { authors: [keys.pubkey] }])
    const end = await Promise.race([reader.next((f) => f[0] === 'EOSE' && f[1] === 'page'), reader.closed.then((c) => ['CLOSE', c.code])])
    expect(end[0]).toBe('EOSE')
    const got = reader.frames.filter((f) => f[0] === 'EVENT' && f[1] === 'page').map((f) => f[2] as NostrEvent)
    expect(idsOf(got).sort()).toEqual(idsOf(sent.map((s) => s.event)).sort())
  })
})
