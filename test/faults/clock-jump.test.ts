import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { type ActorDef, createKernel, type Kernel, type SupervisionEvent, tell } from '../../src/actors/kernel'
import { createMemoryRateLimiter } from '../../src/infra/gates/memory-rate-limit'
import { isExpired } from '../../src/protocols/nip40'
import { checkAuthEvent } from '../../src/protocols/nip42'
import { prefixOf } from '../../src/protocols/reasons'
import { makeKeys, signEvent } from '../support/events'
import { eventually } from '../support/eventually'
import { client, count, fresh, idsOf, publish, relayUrlOf, reqEvents } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'
import type { TestClient } from '../support/ws-client'

/**
 * The wall clock steps (NTP correcting a drifted host, a VM resumed from a snapshot, an operator fixing the
 * date). Where the code takes a clock as a value (NIP-40 `isExpired`, NIP-42 `checkAuthEvent`, the memory
 * GCRA's `now`) the jump is given to it directly. The relay itself has no clock seam (createRelay reads
 * Date.now), so for it the step is made for real: only `Date` is faked, and it keeps running
 * (shouldAdvanceTime); timers, setImmediate and performance.now stay real, as they do across an NTP step.
 */

const HOUR_MS = 3_600_000
const stepWallClock = (toMs: number) => vi.setSystemTime(toMs)

describe('the relay when its wall clock jumps', () => {
  const relays = useRelays()
  let realStartMs = 0
  beforeEach(() => {
    realStartMs = Date.now()
    vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true })
  })
  afterEach(() => {
    vi.useRealTimers()
  })
  const seconds = (ms: number) => Math.floor(ms / 1000)

  it('decides NIP-40 expiry by its own clock: a forward step hides an event whose expiration it passed and refuses it as "invalid:"; a step back serves it again', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = makeKeys()
    const t = seconds(realStartMs)
    const expiring = fresh(keys, { created_at: t, tags: [['expiration', String(t + 30)]] })
    const lasting = fresh(keys, { created_at: t })
    expect((await publish(c, expiring)).accepted).toBe(true)
    expect((await publish(c, lasting)).accepted).toBe(true)

    stepWallClock(realStartMs + 60_000)
    expect(idsOf(await reqEvents(c, [{ authors: [keys.pubkey] }]))).toEqual([lasting.event.id])
    expect(await count(c, [{ authors: [keys.pubkey] }])).toBe(1)
    // the same expiration on a new event is already in the past for the relay
    const late = fresh(keys, { created_at: t, tags: [['expiration', String(t + 30)]] })
    expect(await publish(c, late)).toMatchObject({ accepted: false, prefix: 'invalid' })

    // nothing purged the stored row: by the relay's clock it has not expired any more
    stepWallClock(realStartMs)
    expect(idsOf(await reqEvents(c, [{ authors: [keys.pubkey] }])).sort()).toEqual(idsOf([expiring.event, lasting.event]).sort())
  })

  it('refuses an AUTH created before a step of more than authWindowSeconds with "invalid:", either way, and accepts one made on its new clock', async () => {
    const r = await relays.start({ timeouts: { authWindowSeconds: 60 } })
    const c = await client(r)
    const challenge = (await c.next((f) => f[0] === 'AUTH'))[1] as string
    const keys = makeKeys()
    const authAt = (createdAt: number) => {
      const e = signEvent(keys, {
        kind: 22242,
        created_at: createdAt,
        tags: [
          ['relay', relayUrlOf(r)],
          ['challenge', challenge],
        ],
      })
      c.send(['AUTH', e.event])
      return c.ok(e.event.id)
    }
    const signedBeforeStep = seconds(realStartMs)

    stepWallClock(realStartMs + 120_000)
    const forward = await authAt(signedBeforeStep)
    expect(forward[2]).toBe(false)
    expect(prefixOf(String(forward[3]))).toBe('invalid')

    stepWallClock(realStartMs - 120_000)
    const backward = await authAt(signedBeforeStep)
    expect(backward[2]).toBe(false)
    expect(prefixOf(String(backward[3]))).toBe('invalid')

    // a client that re-reads the time (or the relay's answer) gets in
    expect((await authAt(seconds(Date.now())))[2]).toBe(true)
  })

  it('keeps a connection authenticated across a step, but refuses events from well-synced clients as "invalid:" after a step back beyond createdAtFutureSeconds', async () => {
    const r = await relays.start({ authRequired: true })
    const c = await client(r)
    const keys = makeKeys()
    const challenge = (await c.next((f) => f[0] === 'AUTH'))[1] as string
    const a = signEvent(keys, {
      kind: 22242,
      tags: [
        ['relay', relayUrlOf(r)],
        ['challenge', challenge],
      ],
    })
    c.send(['AUTH', a.event])
    expect((await c.ok(a.event.id))[2]).toBe(true)

    stepWallClock(realStartMs + HOUR_MS)
    // authentication is a property of the connection, not of a time: no re-AUTH after the step
    expect((await publish(c, fresh(keys, { created_at: seconds(Date.now()) }))).accepted).toBe(true)

    stepWallClock(realStartMs - HOUR_MS)
    // a client whose clock is right now looks an hour ahead to the relay (limits.createdAtFutureSeconds = 900)
    expect(await publish(c, fresh(keys, { created_at: seconds(realStartMs) }))).toMatchObject({ accepted: false, prefix: 'invalid' })
    expect((await publish(c, fresh(keys, { created_at: seconds(Date.now()) }))).accepted).toBe(true)
  })

  it('grants no new burst after a forward step and locks nobody out after a step back (admission runs on the monotonic clock)', async () => {
    const r = await relays.start({ rateLimits: { human: { events: { ratePerSecond: 0.01, burst: 3 } } } })
    const c = await client(r)
    const keys = makeKeys()
    const send = () => publish(c, fresh(keys, { created_at: seconds(Date.now()) }))
    for (let i = 0; i < 3; i++) expect((await send()).accepted).toBe(true)
    expect((await send()).message).toMatch(/^rate-limited: retry in (9\d|100)s$/)
    // an hour "passed" by the wall clock: a wall-clock bucket would hold its whole burst again
    stepWallClock(realStartMs + HOUR_MS)
    expect((await send()).message).toMatch(/^rate-limited: retry in (9\d|100)s$/)
    // and after a step back, a wall-clock bucket would ask to wait an hour more: one token at 0.01/s is 100 s
    stepWallClock(realStartMs - HOUR_MS)
    expect((await send()).message).toMatch(/^rate-limited: retry in (9\d|100)s$/)
  })

  // Idleness is measured on the monotonic clock (gateway.ts): on the wall clock, a forward step of more than
  // idleUnauthenticatedMs would close every silent unauthenticated connection at the next heartbeat tick.
  it('does not close a connection as idle after a forward step when it has been silent for less than idleUnauthenticatedMs', async () => {
    const r = await relays.start({ timeouts: { pingIntervalMs: 100, idleUnauthenticatedMs: 60_000 } })
    const c = await client(r)
    stepWallClock(realStartMs + 120_000)
    expect(await openAfterPings(c, 3)).toBe('open')
  })
})

/** 'open' once the relay pinged `n` times (each ping tick runs the idle check first), 'closed' if it closed first. */
function openAfterPings(c: TestClient, n: number): Promise<'open' | 'closed'> {
  return new Promise((resolve) => {
    let pings = 0
    c.ws.on('ping', () => {
      if (++pings >= n) resolve('open')
    })
    void c.closed.then(() => resolve('closed'))
  })
}

describe('pure time checks given a clock that jumps', () => {
  const T = 1_700_000_000

  it('NIP-40: an expiration is judged against the now it is given, so a step either way moves the verdict', () => {
    const e = { tags: [['expiration', String(T + 30)]] }
    expect([T, T + 29, T + 30, T + 3_600, T - 3_600].map((now) => isExpired(e, now))).toEqual([false, false, true, true, false])
  })

  it('NIP-42: an AUTH created before a step larger than the window is refused with "invalid:", at window and window + 1', () => {
    const relayUrl = 'wss://relay.example.com'
    const e = {
      ...signEvent(makeKeys(), {
        kind: 22242,
        created_at: T,
        tags: [
          ['relay', relayUrl],
          ['challenge', 'c'],
        ],
      }).event,
    }
    const at = (nowSeconds: number) => checkAuthEvent(e, { challenge: 'c', relayUrl, nowSeconds, windowSeconds: 600 })
    expect(at(T + 600).ok).toBe(true)
    expect(at(T - 600).ok).toBe(true)
    for (const now of [T + 601, T - 601, T + 3_600, T - 3_600]) {
      const r = at(now)
      expect(r.ok).toBe(false)
      if (!r.ok) expect(prefixOf(r.error)).toBe('invalid')
    }
  })

  describe('the memory GCRA given a clock that jumps', () => {
    const rule = { ratePerSecond: 1, burst: 5 }
    const drain = async (limiter: ReturnType<typeof createMemoryRateLimiter>, key: string) => {
      let admitted = 0
      while ((await limiter.admit(key, rule)).allowed) admitted++
      return admitted
    }

    it('grants at most its burst after a forward jump, however long the jump', async () => {
      let now = 0
      const limiter = createMemoryRateLimiter({ now: () => now })
      expect(await drain(limiter, 'k')).toBe(5)
      now += HOUR_MS
      expect(await drain(limiter, 'k')).toBe(5)
      now += 24 * HOUR_MS
      expect(await drain(limiter, 'k')).toBe(5)
    })

    it('after a backward jump refuses for at most the jump plus the burst, with a finite retry, then admits again', async () => {
      let now = HOUR_MS
      const limiter = createMemoryRateLimiter({ now: () => now })
      expect(await drain(limiter, 'k')).toBe(5)
      now -= HOUR_MS
      const refused = await limiter.admit('k', rule)
      expect(refused.allowed).toBe(false)
      const retryMs = refused.allowed ? 0 : refused.retryAfterMs
      expect(Number.isFinite(retryMs)).toBe(true)
      expect(retryMs).toBeLessThanOrEqual(HOUR_MS + rule.burst * 1000)
      now += retryMs
      expect((await limiter.admit('k', rule)).allowed).toBe(true)
      // a key first seen after the jump is not affected at all
      expect(await drain(limiter, 'fresh')).toBe(5)
    })

    it('defaults to the monotonic clock, which a wall-clock step cannot move', async () => {
      vi.useFakeTimers({ toFake: ['Date'] })
      try {
        const limiter = createMemoryRateLimiter()
        expect(await drain(limiter, 'k')).toBe(5)
        vi.setSystemTime(Date.now() + HOUR_MS)
        expect((await limiter.admit('k', rule)).allowed).toBe(false)
        vi.setSystemTime(Date.now() - 2 * HOUR_MS)
        const r = await limiter.admit('k', rule)
        expect(r.allowed).toBe(false)
        if (!r.allowed) expect(r.retryAfterMs).toBeLessThanOrEqual(1000)
      } finally {
        vi.useRealTimers()
      }
    })
  })
})

/**
 * The kernel's default Clock (src/actors/kernel/clock.ts systemClock) is monotonic, and createRelay passes
 * no other: the crash budget's sliding window and resetAfterMs must not move when the wall clock steps, and
 * the backoff waits are real setTimeouts. These show what a step does to a permanent actor (a community).
 */
describe('the crash budget when the wall clock jumps', () => {
  let kernel: Kernel | undefined
  afterEach(async () => {
    vi.useRealTimers()
    await kernel?.shutdown()
    kernel = undefined
  })

  type Msg = { type: 'Crash' }
  const crashing: ActorDef<null, Msg> = {
    kind: 'clock-jump-test',
    init: () => null,
    handle: () => {
      throw new Error('boom')
    },
    policy: { mode: 'permanent', maxRestarts: 2, windowMs: 500, backoff: { minMs: 1, maxMs: 1, jitter: 0 } },
  }

  /** crash once and wait for the kernel's verdict on it: restarted or gave up */
  async function crashOnce(k: Kernel, events: SupervisionEvent[], path: string): Promise<'restarted' | 'gave-up'> {
    const seen = events.length
    const ref = k.lookup<Msg>(path)
    if (!ref || !tell(ref, { type: 'Crash' })) throw new Error('actor not running')
    const verdict = await eventually(
      () => events.slice(seen).find((e) => (e.type === 'restarted' || e.type === 'gave-up') && 'path' in e && e.path === path),
      (found) => found !== undefined,
      `the verdict on the crash of ${path}`,
    )
    return verdict!.type as 'restarted' | 'gave-up'
  }

  function start(): { k: Kernel; events: SupervisionEvent[] } {
    vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true })
    const k = createKernel()
    kernel = k
    const events: SupervisionEvent[] = []
    k.supervision$.subscribe((e) => events.push(e))
    k.spawn('crashy/1', crashing)
    return { k, events }
  }

  it('gives up after more than maxRestarts crashes within windowMs when the clock does not jump', async () => {
    const { k, events } = start()
    expect(await crashOnce(k, events, 'crashy/1')).toBe('restarted')
    expect(await crashOnce(k, events, 'crashy/1')).toBe('restarted')
    expect(await crashOnce(k, events, 'crashy/1')).toBe('gave-up')
  })

  // On the wall clock a forward step would empty the crash window and let a crash loop escape its give-up
  // budget; the kernel's clock (clock.ts) is monotonic.
  it('still gives up when the wall clock steps forward in the middle of a crash loop', async () => {
    const { k, events } = start()
    await crashOnce(k, events, 'crashy/1')
    await crashOnce(k, events, 'crashy/1')
    stepWallClock(Date.now() + 60_000)
    expect(await crashOnce(k, events, 'crashy/1')).toBe('gave-up')
  })

  // On the wall clock, after a backward step, crashes older than windowMs of real time would still count.
  it('forgets crashes older than windowMs of real time even when the wall clock stepped back meanwhile', async () => {
    const { k, events } = start()
    await crashOnce(k, events, 'crashy/1')
    await crashOnce(k, events, 'crashy/1')
    // the passage of real time is what is being tested: nothing to await but the time itself
    await new Promise((r) => setTimeout(r, 600))
    stepWallClock(Date.now() - 60_000)
    expect(await crashOnce(k, events, 'crashy/1')).toBe('restarted')
  })
})
