import { describe, expect, it } from 'vitest'
import { makeKeys, type SignedEvent } from '../support/events'
import { signEventFast } from '../support/fast-sign'
import { metric } from '../support/metrics'
import { authEvent, challengeOf, client, relayUrlOf } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'
import type { Frame, TestClient } from '../support/ws-client'

/**
 * Control before data (docs/architecture.md §6.6): OK, CLOSED, NOTICE and AUTH answers for a connection go out ahead
 * of its queued EVENT frames (the outbound queue's control lane). A reader that stops reading with megabytes
 * of events queued for it still hears its answers first once it reads again, instead of after all of them.
 */

type RawSocket = { _socket: { pause(): void; resume(): void } }
const socketOf = (c: TestClient) => (c.ws as unknown as RawSocket)._socket
const MiB = 2 ** 20

/** ~24 MiB of kind-1 events: several times what loopback's kernel buffers can hold. */
function bulk(n: number): SignedEvent[] {
  const keys = makeKeys()
  const now = Math.floor(Date.now() / 1000)
  return Array.from({ length: n }, (_, i) => signEventFast(keys, { kind: 1, created_at: now, content: `${i} ${'x'.repeat(12_000)}` }))
}

describe('control frames under a full outbound queue', () => {
  const relays = useRelays()
  const EVENTS = bulk(2_000)

  it('sends the OK, CLOSED, NOTICE and AUTH answers to a paused reader ahead of the EVENT frames queued before them', async () => {
    expect(EVENTS.reduce((n, e) => n + e.raw.length, 0)).toBeGreaterThan(22 * MiB)
    // a bound far above the backlog, and a long grace: this reader is slow, not a slow consumer to close
    const r = await relays.start({ limits: { maxPendingOutboundBytes: 256 * MiB, slowConsumerGraceMs: 60_000 } })
    const reader = await client(r)
    const challenge = await challengeOf(reader)
    reader.send(['REQ', 'feed', { kinds: [1] }])
    await reader.next((f) => f[0] === 'EOSE' && f[1] === 'feed')
    const pub = await client(r)
    socketOf(reader).pause()
    for (const e of EVENTS) pub.sendRaw(`["EVENT",${e.raw}]`)
    // fan-out precedes each OK: once the last OK is in, every EVENT frame is queued for the reader
    await Promise.all(EVENTS.map((e) => pub.ok(e.event.id)))

    const authed = authEvent(makeKeys(), challenge, relayUrlOf(r))
    const note = signEventFast(makeKeys(), { kind: 1, content: 'control' })
    reader.send(['AUTH', authed.event])
    reader.send(['EVENT', note.event])
    reader.send(['REQ', 'too-many', ...Array.from({ length: 11 }, () => ({ kinds: [1] }))])
    reader.sendRaw('not json')
    // the relay answers while the reader is still paused (seen from outside, on /metrics)
    await expect.poll(() => metric(r, 'apiary_handshake_seconds_count'), { timeout: 5_000 }).toBe(1)
    await expect.poll(() => metric(r, 'apiary_events_accepted_total'), { timeout: 5_000 }).toBe(EVENTS.length + 1)
    await expect.poll(() => metric(r, 'apiary_notices_total'), { timeout: 5_000 }).toBe(1)
    socketOf(reader).resume()
    const isControl = (f: Frame) => f[0] !== 'EVENT'
    const answers = await Promise.all([
      reader.ok(authed.event.id),
      reader.ok(note.event.id),
      reader.next((f) => f[0] === 'CLOSED' && f[1] === 'too-many'),
      reader.next((f) => f[0] === 'NOTICE'),
    ])
    const eventsBefore = (f: Frame) =>
      reader.frames.slice(0, reader.frames.indexOf(f)).filter((x) => x[0] === 'EVENT' && x[1] === 'feed').length
    // only what had left the queue already (one write batch, the kernel's buffers) is ahead of them
    for (const a of answers) expect(eventsBefore(a), JSON.stringify(a).slice(0, 80)).toBeLessThan(EVENTS.length / 2)
    expect(answers.every(isControl)).toBe(true)
    // and nothing queued was skipped: every event still arrives, in order
    await reader.next(
      (f) => f[0] === 'EVENT' && f[1] === 'feed' && (f[2] as { content: string }).content.startsWith(`${EVENTS.length - 1} `),
      20_000,
    )
    const seqs = reader.frames
      .filter((f) => f[0] === 'EVENT' && f[1] === 'feed')
      .map((f) => Number((f[2] as { content: string }).content.split(' ')[0]))
    expect(seqs.filter((s) => s < EVENTS.length)).toEqual(Array.from({ length: EVENTS.length }, (_, i) => i))
  })
})
