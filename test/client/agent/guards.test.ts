import { describe, expect, it } from 'vitest'
import { InboundDedup } from '../../../src/client/agent/inbound-dedup'
import { InboundLimits } from '../../../src/client/agent/inbound-limits'
import { OfflineQueue } from '../../../src/client/agent/offline-queue'
import { resolveOptions } from '../../../src/client/agent/options'
import { Publisher } from '../../../src/client/agent/publisher'
import type { OkAnswer, RelaySocket } from '../../../src/client/agent/relay-socket'
import { SocketGone } from '../../../src/client/agent/relay-socket'
import { OutboundThrottle } from '../../../src/client/agent/throttle'
import type { NostrEvent } from '../../../src/protocols/nip01/event'
import { FakeClock } from './fake-clock'

const ONE_PER_SECOND = { ratePerSecond: 1, burst: 1 }
const OPEN = { ratePerSecond: 1000, burst: 1000 }

let counter = 0
const fakeEvent = (tags: string[][] = [], content = ''): NostrEvent => ({
  id: (++counter).toString(16).padStart(64, '0'),
  pubkey: 'ab'.repeat(32),
  created_at: 1_700_000_000,
  kind: 1,
  tags,
  content,
  sig: 'cd'.repeat(64),
})

/** A socket that answers every EVENT with `answer(event, attempt)`; `undefined` is an OK that never comes. */
function fakeSocket(answer: (e: NostrEvent, n: number) => OkAnswer | undefined | 'gone') {
  const sent: string[] = []
  const socket = {
    isOpen: true,
    sendAndAwaitOk: async (_verb: string, e: NostrEvent) => {
      sent.push(e.id)
      const a = answer(e, sent.filter((id) => id === e.id).length)
      if (a === 'gone') throw new SocketGone(false)
      return a
    },
  } as unknown as RelaySocket
  return { socket, sent }
}

function publisherWith(
  clock: FakeClock,
  socket: () => RelaySocket | undefined,
  extra: Parameters<typeof resolveOptions>[0] extends infer O ? Partial<O> : never = {},
) {
  const o = resolveOptions({ relays: ['ws://x'], secretKey: '11'.repeat(32), capabilities: [], clock, random: () => 0, ...extra })
  return new Publisher(o, socket)
}

const note = (tags: string[][]) => ({ kind: 1, tags })

describe('the outbound throttle', () => {
  it('lets a burst through, then makes each publish wait its turn per global / channel / recipient key', () => {
    const t = new OutboundThrottle({
      global: { ratePerSecond: 10, burst: 3 },
      perChannel: ONE_PER_SECOND,
      perRecipient: { ratePerSecond: 2, burst: 1 },
    })
    expect(t.reserve(note([]), 0, 5000)).toEqual({ ok: true, waitMs: 0 })
    expect(t.reserve(note([['h', 'lobby']]), 0, 5000)).toEqual({ ok: true, waitMs: 0 })
    expect(t.reserve(note([['p', 'bob']]), 0, 5000)).toEqual({ ok: true, waitMs: 0 })
    // global burst of 3 spent: the 4th waits one emission interval (100 ms)
    expect(t.reserve(note([]), 0, 5000)).toEqual({ ok: true, waitMs: 100 })
    // the channel allows one per second: its second publish waits for it, whatever the global allows
    expect(t.reserve(note([['h', 'lobby']]), 0, 5000)).toEqual({ ok: true, waitMs: 1000 })
    expect(t.reserve(note([['h', 'other']]), 0, 5000).ok).toBe(true)
    expect(t.reserve(note([['p', 'bob']]), 0, 5000)).toEqual({ ok: true, waitMs: 500 })
  })

  it("does not hold an assignee's answers to the requester who asked for them to the per-recipient rate", () => {
    const t = new OutboundThrottle({ global: OPEN, perChannel: OPEN, perRecipient: { ratePerSecond: 2, burst: 1 } })
    const chunk = (seq: number) => ({
      kind: 25_901,
      tags: [
        ['e', 'job'],
        ['p', 'bob'],
        ['generation', '1'],
        ['seq', String(seq)],
      ],
    })
    for (let seq = 0; seq < 5; seq++) expect(t.reserve(chunk(seq), 0, 5000)).toEqual({ ok: true, waitMs: 0 })
    // without a generation it is a plain event to bob, and waits its turn
    expect(t.reserve({ kind: 7000, tags: [['p', 'bob']] }, 0, 5000)).toEqual({ ok: true, waitMs: 0 })
    expect(t.reserve({ kind: 7000, tags: [['p', 'bob']] }, 0, 5000)).toEqual({ ok: true, waitMs: 500 })
  })

  it('refuses past maxWaitMs with the wait it would have needed, and reserves nothing then', () => {
    const t = new OutboundThrottle({ global: ONE_PER_SECOND, perChannel: OPEN, perRecipient: OPEN })
    const waits = Array.from({ length: 6 }, () => t.reserve(note([]), 0, 5000))
    expect(waits.map((w) => (w.ok ? w.waitMs : -1))).toEqual([0, 1000, 2000, 3000, 4000, 5000])
    expect(t.reserve(note([]), 0, 5000)).toEqual({ ok: false, retryAfterMs: 6000 })
    expect(t.reserve(note([]), 0, 5000)).toEqual({ ok: false, retryAfterMs: 6000 })
    expect(t.reserve(note([]), 1000, 5000)).toEqual({ ok: true, waitMs: 5000 })
  })
})

describe('publishing through the outbound guard', () => {
  it('waits for the throttle, then resolves throttled: true with retryAfterMs past maxWaitMs', async () => {
    const clock = new FakeClock()
    const { socket } = fakeSocket(() => ({ accepted: true, message: '' }))
    const p = publisherWith(clock, () => socket, { maxWaitMs: 1500, throttle: { global: ONE_PER_SECOND } })
    const results: unknown[] = []
    for (let i = 0; i < 3; i++) void p.publish(fakeEvent()).then((r) => (results[i] = r))
    await clock.advance(0)
    // the first at once; the third would wait 2 s, past maxWaitMs, so it is refused at once
    expect(results[0]).toMatchObject({ ok: true, duplicate: false })
    expect(results[2]).toMatchObject({ ok: false, throttled: true, retryAfterMs: 2000 })
    await clock.advance(999)
    expect(results[1]).toBeUndefined()
    await clock.advance(1)
    expect(results[1]).toMatchObject({ ok: true })
    expect(p.counters).toMatchObject({ sent: 2, throttled: 1, waitedSeconds: 1 })
  })

  it('retries an OK timeout and an `error:` with 0.4 s doubling, and counts a duplicate as success', async () => {
    const clock = new FakeClock()
    const { socket, sent } = fakeSocket((_e, n) =>
      n === 1 ? undefined : n === 2 ? { accepted: false, message: 'error: store busy' } : { accepted: true, message: 'duplicate: have it' },
    )
    const p = publisherWith(clock, () => socket, { okTimeoutMs: 100 })
    const result = p.publish(fakeEvent())
    await clock.advance(10_000)
    expect(await result).toMatchObject({ ok: true, duplicate: true })
    expect(sent).toHaveLength(3)
    expect(p.counters.retried).toBe(2)
    // sleeps asked of the clock: 400 ms after the first failure, 800 ms after the second
    expect(clock.requested.filter((ms) => ms >= 400)).toEqual([400, 800])
  })

  it('returns a `restricted:` OK false as that publish result, without a retry', async () => {
    const clock = new FakeClock()
    const { socket, sent } = fakeSocket(() => ({ accepted: false, message: 'restricted: not a member' }))
    const p = publisherWith(clock, () => socket)
    const r = p.publish(fakeEvent())
    await clock.advance(0)
    expect(await r).toMatchObject({ ok: false, reason: 'restricted: not a member' })
    expect(sent).toHaveLength(1)
  })

  it('queues a publish whose socket closed before the OK, and while not ACTIVE, then flushes in order, one per 50 ms', async () => {
    const clock = new FakeClock()
    let live = true
    const first = fakeEvent()
    const { socket, sent } = fakeSocket((e, n) => (e.id === first.id && n === 1 ? 'gone' : { accepted: true, message: '' }))
    const p = publisherWith(clock, () => (live ? socket : undefined))
    const r1 = p.publish(first)
    await clock.advance(0)
    expect(await r1).toMatchObject({ ok: false, queued: true, id: first.id })
    live = false
    const later = [fakeEvent(), fakeEvent(), fakeEvent()]
    for (const e of later) expect(await p.publish(e)).toMatchObject({ ok: false, queued: true, id: e.id })
    expect(p.queue.ids()).toEqual([first.id, ...later.map((e) => e.id)])
    live = true
    const flushed = p.flush()
    await clock.advance(0)
    expect(sent.slice(1)).toEqual([first.id])
    await clock.advance(50)
    expect(sent.slice(1)).toEqual([first.id, later[0]!.id])
    await clock.advance(150)
    await flushed
    expect(sent.slice(1)).toEqual([first.id, ...later.map((e) => e.id)])
    expect(p.queue.length).toBe(0)
  })
})

describe('publish order across a reconnect', () => {
  it('sends a publish asleep in a retry backoff when the socket dropped before the ones queued after it', async () => {
    const clock = new FakeClock()
    let live = true
    const first = fakeEvent()
    const { socket, sent } = fakeSocket((e, n) =>
      e.id === first.id && n === 1 ? { accepted: false, message: 'error: store busy' } : { accepted: true, message: '' },
    )
    const p = publisherWith(clock, () => (live ? socket : undefined))
    const r1 = p.publish(first)
    await clock.advance(0)
    // `first` sleeps 400 ms before its retry; meanwhile the socket drops and two more are queued
    live = false
    const later = [fakeEvent(), fakeEvent()]
    for (const e of later) expect(await p.publish(e)).toMatchObject({ queued: true })
    live = true
    void p.flush()
    await clock.advance(1000)
    expect(sent).toEqual([first.id, first.id, ...later.map((e) => e.id)])
    expect(await r1).toMatchObject({ ok: false, queued: true, id: first.id })
    expect(p.queue.length).toBe(0)
  })
})

describe('the offline queue', () => {
  it('holds 256 events; the 257th drops the oldest, counted and told', () => {
    const told: string[] = []
    const q = new OfflineQueue({ maxEvents: 256, maxBytes: 1 << 20 }, (item) => told.push(item.event.id))
    const events = Array.from({ length: 257 }, () => fakeEvent())
    for (const [i, e] of events.entries()) q.push(e, i)
    expect(q.length).toBe(256)
    expect(q.dropped).toBe(1)
    expect(told).toEqual([events[0]!.id])
    expect(q.ids()[0]).toBe(events[1]!.id)
    expect(q.ids().at(-1)).toBe(events[256]!.id)
  })

  it('drops the oldest past its byte bound, and puts a retried send back in publish order', () => {
    const big = 'x'.repeat(1000)
    const size = Buffer.byteLength(JSON.stringify(fakeEvent([], big)))
    const q = new OfflineQueue({ maxEvents: 256, maxBytes: size * 3 })
    const events = Array.from({ length: 4 }, () => fakeEvent([], big))
    q.push(events[1]!, 1)
    q.push(events[3]!, 3)
    q.push(events[0]!, 0)
    q.push(events[2]!, 2)
    expect(q.ids()).toEqual([events[1]!.id, events[2]!.id, events[3]!.id])
    expect(q.dropped).toBe(1)
    expect(q.byteLength).toBe(size * 3)
  })
})

describe('the inbound dedup', () => {
  const T = 1_700_000_000

  it('drops a repeat; past the 300 s window an entry below its resume point goes, one at or past it stays', () => {
    const d = new InboundDedup({ windowMs: 300_000, maxIds: 2 })
    expect(d.admit('s', 'a', T, 0)).toBe(true)
    expect(d.admit('s', 'a', T, 299_999)).toBe(false)
    d.setFloor('s', T)
    // full: a sweep at 400 s keeps `a`, whose created_at a resume from T can bring back
    expect(d.admit('s', 'b', T + 1, 400_000)).toBe(true)
    expect(d.admit('s', 'a', T, 400_001)).toBe(false)
    expect(d.dropped).toBe(2)
  })

  it('keeps what a resume can bring back after an outage of any length (not 300 s after arrival)', () => {
    const d = new InboundDedup({ windowMs: 300_000, maxIds: 1 })
    d.admit('s', 'old', T, 0)
    d.setFloor('s', T - 60)
    // ten minutes later the resumed REQ asks from T - 60 and the relay sends `old` again
    expect(d.admit('s', 'old', T, 600_000)).toBe(false)
    d.setFloor('s', T + 1)
    expect(d.admit('s', 'new', T + 61, 600_001)).toBe(true)
    expect(d.admit('s', 'old', T, 600_002)).toBe(true)
  })

  it('holds at most 20,000 ids: expired ones go first, then the oldest', () => {
    const d = new InboundDedup({ windowMs: 300_000, maxIds: 20_000 })
    d.setFloor('s', T)
    // the first ten are below the resume point: they expire once past the window
    for (let i = 0; i < 20_000; i++) d.admit('s', `id${i}`, i < 10 ? T - 1 : T, i < 10 ? 0 : 100_000)
    expect(d.size).toBe(20_000)
    for (let i = 0; i < 10; i++) expect(d.admit('s', `new${i}`, T, 300_000)).toBe(true)
    expect(d.admit('s', 'id10', T, 300_000)).toBe(false)
    // full of live ids: the oldest live one is evicted
    expect(d.admit('s', 'newest', T, 300_001)).toBe(true)
    expect(d.size).toBe(20_000)
    expect(d.admit('s', 'id10', T, 300_002)).toBe(true)
    expect(d.admit('s', 'id11', T, 300_002)).toBe(true)
  })

  it('evicts by arrival: an id swept as expired and delivered again is a new arrival, not its first one', () => {
    const d = new InboundDedup({ windowMs: 300_000, maxIds: 3 })
    d.setFloor('s', T)
    d.admit('s', 'a', T - 1, 0)
    d.admit('s', 'b', T - 1, 0)
    d.admit('s', 'c', T, 0)
    // full: the sweep at 400 s frees a and b (below the resume point, past the window)
    expect(d.admit('s', 'd', T, 400_000)).toBe(true)
    expect(d.admit('s', 'a', T, 400_001)).toBe(true)
    // full of live ids: the oldest arrival goes, which is c (a's first arrival is long gone)
    expect(d.admit('s', 'e', T, 400_002)).toBe(true)
    expect(d.admit('s', 'a', T, 400_003)).toBe(false)
    expect(d.admit('s', 'c', T, 400_004)).toBe(true)
    expect(d.size).toBe(3)
  })

  it('keeps exactly the newest arrivals over many evictions', () => {
    const d = new InboundDedup({ windowMs: 300_000, maxIds: 100 })
    for (let i = 0; i < 10_000; i++) d.admit('s', `id${i}`, T, i)
    expect(d.size).toBe(100)
    expect(d.admit('s', 'id9999', T, 10_000)).toBe(false)
    expect(d.admit('s', 'id9900', T, 10_000)).toBe(false)
    expect(d.admit('s', 'id9899', T, 10_000)).toBe(true)
  })
})

describe('the inbound limits', () => {
  const from = (author: string, tags: string[][] = []) => ({ ...fakeEvent(tags), pubkey: author.repeat(64) })

  it('lets an author reach its limit, skips the next, and lets it in again once the window slides', () => {
    const limits = new InboundLimits({ perAuthor: { maxEvents: 3, windowMs: 1000 } })
    expect([0, 100, 200].map((t) => limits.admit(from('a'), t))).toEqual([true, true, true])
    expect(limits.admit(from('a'), 300)).toBe(false)
    // another author has its own window
    expect(limits.admit(from('b'), 300)).toBe(true)
    expect(limits.admit(from('a'), 1000)).toBe(true)
    expect(limits.admit(from('a'), 1001)).toBe(false)
    expect(limits.skipped).toBe(2)
  })

  it('in notify mode tells the application at most once per window per key', () => {
    const notices: string[] = []
    const limits = new InboundLimits({
      perChannel: { maxEvents: 1, windowMs: 1000 },
      mode: 'notify',
      onLimited: (_e, key) => notices.push(key),
    })
    const inLobby = () => from('a', [['h', 'lobby']])
    expect(limits.admit(inLobby(), 0)).toBe(true)
    for (let t = 1; t < 1000; t += 100) expect(limits.admit(inLobby(), t)).toBe(false)
    expect(notices).toEqual(['h:lobby'])
    expect(limits.admit(inLobby(), 1000)).toBe(true)
    expect(limits.admit(inLobby(), 1001)).toBe(false)
    expect(notices).toEqual(['h:lobby', 'h:lobby'])
    // an event outside any channel is not counted against one
    expect(limits.admit(from('a'), 1002)).toBe(true)
  })
})
