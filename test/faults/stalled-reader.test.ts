import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { makeKeys, type SignedEvent } from '../support/events'
import { eventually } from '../support/eventually'
import { signEventFast } from '../support/fast-sign'
import { metric } from '../support/metrics'
import { client, publish } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'
import { GENEROUS_ENV, startRelayProcess } from '../support/relay-process'
import { connect, type TestClient } from '../support/ws-client'

/**
 * A reader that stops reading: its TCP socket is paused (nothing is closed; the kernel's buffers fill, then the
 * relay's). README "slow consumer": over limits.maxPendingOutboundBytes for limits.slowConsumerGraceMs, or over
 * 4×, it is closed (1008, counted) and what it costs the relay is bounded by those bytes (plus the kernel's
 * socket buffer), not by what is owed to it. "Closed" is the relay's side: the close frame is sent and, as a
 * paused peer never reads up to it, the socket is destroyed shortly after. test/faults/slow-and-healthy.test.ts
 * covers readers that resume at once (they see the 1008 frame) and the cross-node path.
 */

type RawSocket = { _socket: { pause(): void; resume(): void } }
const socketOf = (c: TestClient) => (c.ws as unknown as RawSocket)._socket
const seqOf = (f: unknown[]) => Number((f[2] as NostrEvent).content.split(' ')[0])
const eventSeqs = (c: TestClient, subId: string) => c.frames.filter((f) => f[0] === 'EVENT' && f[1] === subId).map(seqOf)
const inOrder = (n: number) => Array.from({ length: n }, (_, i) => i)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const MiB = 2 ** 20

/** Numbered kind-1 events, signed once for the file (signing is the slow part of building them). */
function signedEvents(n: number, contentBytes: (i: number) => number): SignedEvent[] {
  const keys = makeKeys()
  const now = Math.floor(Date.now() / 1000)
  return Array.from({ length: n }, (_, i) =>
    signEventFast(keys, { kind: 1, created_at: now - (i % 60), content: `${i} ${'x'.repeat(contentBytes(i))}` }),
  )
}

/**
 * The test's load, seeded by `round` (each round its own authors, so no two rounds share an id): 70 % kind 1,
 * 20 % kind 7, 10 % kind 6, content 50–1,000 bytes, each event's content starting with its number.
 */
function issueLoad(n: number, round: number): SignedEvent[] {
  const authors = Array.from({ length: 20 }, makeKeys)
  const now = Math.floor(Date.now() / 1000)
  const kindOf = (i: number) => (i % 10 < 7 ? 1 : i % 10 < 9 ? 7 : 6)
  return Array.from({ length: n }, (_, i) =>
    signEventFast(authors[(i + round) % authors.length]!, {
      kind: kindOf(i),
      created_at: now - (i % 600),
      content: `${i} ${'x'.repeat(50 + ((i * 7_919) % 951))}`,
    }),
  )
}

/** Resolves once `c` has received `n` EVENT frames for `subId`. */
async function receivedCount(c: TestClient, subId: string, n: number, ms: number): Promise<void> {
  await eventually(() => c.frames.filter((f) => f[0] === 'EVENT' && f[1] === subId).length >= n, `${n} events on ${subId}`, {
    timeoutMs: ms,
  })
}

/** Pipelines every event (no waiting between them); resolves with how many were answered OK true. */
async function publishPipelined(pub: TestClient, events: SignedEvent[]): Promise<number> {
  const ids = new Set(events.map((e) => e.event.id))
  for (const e of events) pub.sendRaw(`["EVENT",${e.raw}]`)
  // one wait that counts the OKs (each frame is offered to it once), not one per event: 20,000 waiters made
  // every incoming frame a scan of them all; the deadline is for the whole burst
  let answered = 0
  let accepted = 0
  await pub.next((f) => {
    if (f[0] !== 'OK' || !ids.has(f[1] as string)) return false
    if (f[2] === true) accepted++
    return ++answered === ids.size
  }, 60_000)
  return accepted
}

async function subscribeAll(c: TestClient, subIds: string[]): Promise<void> {
  for (const s of subIds) {
    c.send(['REQ', s, { kinds: [1] }])
    await c.next((f) => f[0] === 'EOSE' && f[1] === s)
  }
}

/**
 * What a paused reader got before the relay closed it: for every subscription the same in-order prefix of
 * `expected` (the numbers of the events its filter matches, in publishing order).
 */
function expectInOrderPrefixes(c: TestClient, subIds: string[], expected: number[]): number {
  const counts = subIds.map((s) => {
    const seqs = eventSeqs(c, s)
    expect(seqs).toEqual(expected.slice(0, seqs.length))
    return seqs.length
  })
  // one event's frames go out together: a cut falls inside one event at most
  expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1)
  expect(Math.max(...counts)).toBeLessThan(expected.length)
  return counts.reduce((a, b) => a + b, 0)
}

/** Polls until `holds` (every 20 ms, so a time taken from it is that precise): the value and when it held. */
async function when<T>(probe: () => Promise<T>, holds: (v: T) => boolean, what: string, ms: number): Promise<{ value: T; atMs: number }> {
  const value = await eventually(probe, holds, what, { timeoutMs: ms, intervalMs: 20 })
  return { value, atMs: performance.now() }
}

const GRACE_MS = 1_000
/** README: "closed ... within slowConsumerGraceMs" of going over the bound, plus one second of slack. */
const CLOSE_DEADLINE_MS = GRACE_MS + 1_000

describe('a reader that stops reading', () => {
  // The load: 10 subscriptions matching every kind-1 event on one paused connection, a healthy
  // subscriber, and 20,000 pre-signed events pipelined (70 % kind 1, content 50–1,000 bytes): ~80 MB owed.
  const SUBS = Array.from({ length: 10 }, (_, i) => `all-${i}`)
  const EVENTS = issueLoad(20_000, 0)
  const KIND1 = EVENTS.filter((e) => e.event.kind === 1).map((e) => Number(e.event.content.split(' ')[0]))
  const OWED_BYTES = EVENTS.filter((e) => e.event.kind === 1).reduce((sum, e) => sum + e.raw.length, 0) * SUBS.length

  it('is closed (1008 sent, logged and counted; socket destroyed) within slowConsumerGraceMs + 1 s and costs the relay under 64 MiB of RSS while ~80 MB is owed to it', async () => {
    // what is owed, as the bytes it would take once handed to ws (the defect this test guards against: a
    // paused reader's frames held in ws's buffers), is over 80 MB; frames still queued in the relay share their
    // event's raw string and cost far less, which is why the backlog stays there until the reader is closed
    expect(OWED_BYTES).toBeGreaterThan(80 * 1_000_000)
    const dir = mkdtempSync(join(tmpdir(), 'apiary-stalled-'))
    const relay = await startRelayProcess(['--port', '0', '--data-dir', dir], {
      ...GENEROUS_ENV,
      APIARY_LIMITS_SLOW_CONSUMER_GRACE_MS: String(GRACE_MS),
    })
    const pid = relay.proc.pid ?? 0
    const rss = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024
    const node = { port: Number(new URL(relay.url).port) }
    const metricOf = (name: string) => metric(node, name)
    let sampler: ReturnType<typeof setInterval> | undefined
    try {
      const healthy = await connect(relay.url)
      await subscribeAll(healthy, ['feed'])
      const pub = await connect(relay.url)
      // Warm-up: the same volume once with no stalled reader, so that what is measured below is what the
      // stalled reader costs, not what any first burst costs a fresh process (SQLite's page cache, 16 MiB per
      // connection in better-sqlite3's build, and V8 growing its young generation to its working size)
      const warmUp = issueLoad(20_000, 1)
      expect(await publishPipelined(pub, warmUp)).toBe(warmUp.length)
      await receivedCount(healthy, 'feed', warmUp.filter((e) => e.event.kind === 1).length, 20_000)
      healthy.frames.length = 0
      const stalled = await connect(relay.url)
      await subscribeAll(stalled, SUBS)
      // the pages (stored warm-up events) are not what is counted below
      stalled.frames.length = 0
      expect(await metricOf('apiary_connections_active')).toBe(3)
      // the baseline once the warm-up has settled: the relay's RSS moving less than 2 MiB in a quarter second
      let lastRss = Number.NaN
      const rssBefore = await eventually(
        () => {
          const [previous, now] = [lastRss, rss()]
          lastRss = now
          return { now, moved: Math.abs(now - previous) }
        },
        ({ moved }) => moved < 2 * MiB,
        "the relay's RSS steady after the warm-up",
        { timeoutMs: 10_000, intervalMs: 250 },
      ).then(({ now }) => now)
      let rssPeak = rssBefore
      sampler = setInterval(() => {
        rssPeak = Math.max(rssPeak, rss())
      }, 25)

      socketOf(stalled).pause()
      expect(await publishPipelined(pub, EVENTS)).toBe(EVENTS.length)
      const lastOkAtMs = performance.now()
      // every push for every event has happened once its OK is out (fan-out precedes the OK), so the reader
      // went over the bound by now: its socket must be gone within the grace period plus one second
      const gone = await when(
        () => metricOf('apiary_connections_active'),
        (n) => n === 2,
        'the stalled reader closed',
        CLOSE_DEADLINE_MS + 2_000,
      )
      expect(gone.value).toBe(2)
      expect(gone.atMs - lastOkAtMs).toBeLessThan(CLOSE_DEADLINE_MS)
      expect(await metricOf('apiary_slow_consumer_closes_total')).toBe(1)
      const logged = relay
        .stdout()
        .split('\n')
        .filter((l) => l.includes('slow consumer closed'))
        .map((l) => JSON.parse(l) as { code: number; reason: string })
      expect(logged).toHaveLength(1)
      expect(logged[0]!.code).toBe(1008)
      expect(logged[0]!.reason).toMatch(/^error: /)

      // the reader that keeps up got every kind-1 event, in order
      await healthy.next((f) => f[0] === 'EVENT' && seqOf(f) === KIND1.at(-1), 20_000)
      expect(eventSeqs(healthy, 'feed')).toEqual(KIND1)
      await sleep(250)
      clearInterval(sampler)
      expect((rssPeak - rssBefore) / MiB).toBeLessThan(64)

      // Resuming now, the reader gets what the kernel's buffers held (an in-order prefix: nothing skipped while
      // it was subscribed), then the end of the socket: 1008 and the reason when the close frame still fitted
      // in the kernel's buffer (the 4× bound can trip within one burst, before the kernel is full), else 1006.
      expect(stalled.ws.readyState).toBe(stalled.ws.OPEN)
      socketOf(stalled).resume()
      const closed = await stalled.closed
      expect([1006, 1008]).toContain(closed.code)
      if (closed.code === 1008) expect(closed.reason).toMatch(/^error: /)
      const got = expectInOrderPrefixes(stalled, SUBS, KIND1)
      expect(got).toBeGreaterThan(0)
      for (const c of [healthy, pub]) expect(c.ws.readyState).toBe(c.ws.OPEN)
      healthy.close()
      pub.close()
    } finally {
      clearInterval(sampler)
      relay.proc.kill('SIGKILL')
      await relay.exited
      rmSync(dir, { recursive: true, force: true })
    }
  }, 90_000)

  const relays = useRelays()
  // bigger events for the grace-period case: ~5 MB owed per subscription
  const BIG_EVENTS = signedEvents(400, (i) => 10_000 + ((i * 7_919) % 4_001))

  it('is closed once it has stayed over maxPendingOutboundBytes for slowConsumerGraceMs (and below 4×): not before, and within one second more', async () => {
    // 4 × ~5 MB owed, less the kernel's buffers: over 8 MiB for good, under 32 MiB (the no-grace bound)
    const r = await relays.start({ limits: { maxPendingOutboundBytes: 8 * MiB, slowConsumerGraceMs: GRACE_MS } })
    const subs = SUBS.slice(0, 4)
    const stalled = await client(r)
    await subscribeAll(stalled, subs)
    const pub = await client(r)
    const active = () => metric(r, 'apiary_connections_active')
    expect(await active()).toBe(2)
    socketOf(stalled).pause()
    const startedAtMs = performance.now()
    expect(await publishPipelined(pub, BIG_EVENTS)).toBe(BIG_EVENTS.length)
    const lastOkAtMs = performance.now()
    const gone = await when(active, (n) => n === 1, 'the stalled reader closed', CLOSE_DEADLINE_MS + 2_000)
    expect(gone.value).toBe(1)
    // it can't have gone over the bound before the first event was sent, nor after the last OK
    expect(gone.atMs - startedAtMs).toBeGreaterThanOrEqual(GRACE_MS)
    expect(gone.atMs - lastOkAtMs).toBeLessThan(CLOSE_DEADLINE_MS)
    expect(await metric(r, 'apiary_slow_consumer_closes_total')).toBe(1)
    socketOf(stalled).resume()
    expect((await stalled.closed).code).toBe(1006)
    expectInOrderPrefixes(stalled, subs, inOrder(BIG_EVENTS.length))
    expect(pub.ws.readyState).toBe(pub.ws.OPEN)
  })
})

describe('a reader that is slow but keeps up', () => {
  const relays = useRelays()

  it('is not closed and gets every event in order, beside a paused reader that the same load closes', async () => {
    const r = await relays.start({ limits: { maxPendingOutboundBytes: 256 * 1024, slowConsumerGraceMs: GRACE_MS } })
    const events = signedEvents(1_000, () => 4_000)
    const slow = await client(r)
    await subscribeAll(slow, ['feed'])
    // the control: the same stream, four times over, to a reader that stops — the load does trip the bound
    const paused = await client(r)
    await subscribeAll(paused, ['a', 'b', 'c', 'd'])
    const pub = await client(r)
    // reads in bursts of 20 frames (~80 KB), then stops reading its socket for 50 ms: ~1.6 MB/s at most
    let pauses = 0
    let seen = 0
    slow.ws.on('message', () => {
      if (++seen % 20 !== 0) return
      pauses++
      socketOf(slow).pause()
      setTimeout(() => socketOf(slow).resume(), 50)
    })
    socketOf(paused).pause()
    // published at ~1 MB/s: 10 events every 40 ms, each waiting for its OK before the next batch
    for (let i = 0; i < events.length; i += 10) {
      const batch = events.slice(i, i + 10)
      const oks = await Promise.all(batch.map((e) => publish(pub, e)))
      expect(oks.every((o) => o.accepted)).toBe(true)
      await sleep(40)
    }
    await slow.next((f) => f[0] === 'EVENT' && seqOf(f) === events.length - 1, 10_000)
    expect(eventSeqs(slow, 'feed')).toEqual(inOrder(events.length))
    expect(pauses).toBeGreaterThanOrEqual(events.length / 20 - 1)
    expect(slow.ws.readyState).toBe(slow.ws.OPEN)
    // only the paused one was closed
    expect(await metric(r, 'apiary_slow_consumer_closes_total')).toBe(1)
    expect(await metric(r, 'apiary_connections_active')).toBe(2)
    socketOf(paused).resume()
    expect((await paused.closed).code).toBe(1006)
  }, 30_000)
})
