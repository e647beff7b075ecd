import { afterEach, describe, expect, it } from 'vitest'
import { AgentClient, AgentError, type AgentStateChange } from '../../../src/client/agent/agent-client'
import { parseRetryAfterMs, ReconnectSchedule } from '../../../src/client/agent/backoff'
import { scheduledDelayMs } from '../../../src/protocols/backoff'
import type { NostrEvent } from '../../../src/protocols/nip01/event'
import { eventually } from '../../support/eventually'
import { FakeClock, seededRandom } from './fake-clock'
import { okAll, startScriptedRelay } from './scripted-relay'

const POLICY = { minMs: 1000, maxMs: 30_000, jitter: 0.25 }
const STABLE_MS = 30_000

describe('the reconnect schedule', () => {
  it('over 10,000 simulated failures never reconnects earlier than 1 s·2^n (capped at 30 s), jitter only lengthens by < 25 %, and resets only after 30 s up', () => {
    const clock = new FakeClock()
    const random = seededRandom(42)
    const schedule = new ReconnectSchedule(POLICY, STABLE_MS, random)
    // the model: n counts failures since the last connection that stayed up for the stable period
    let n = 0
    let resets = 0
    let jitterSeen = 0
    for (let i = 0; i < 10_000; i++) {
      // some connections fail before ACTIVE, some are kicked at once, some stay up long enough to count
      const r = random()
      let upMs: number | undefined
      if (r < 0.4) upMs = undefined
      else if (r < 0.8) upMs = Math.floor(random() * (STABLE_MS - 1))
      else upMs = STABLE_MS + Math.floor(random() * 60_000)
      if (upMs !== undefined) {
        schedule.connected(clock.now())
        clock.advanceSync(upMs)
      }
      if (upMs !== undefined && upMs >= STABLE_MS) {
        n = 0
        resets++
      }
      const floor = Math.min(30_000, 1000 * 2 ** n)
      const delay = schedule.failed(clock.now())
      expect(delay).toBeGreaterThanOrEqual(floor)
      expect(delay).toBeLessThan(floor * 1.25)
      expect(floor).toBe(scheduledDelayMs(POLICY, n))
      jitterSeen = Math.max(jitterSeen, delay / floor - 1)
      n++
      clock.advanceSync(delay)
    }
    expect(resets).toBeGreaterThan(1000)
    // the jitter is used, not just bounded
    expect(jitterSeen).toBeGreaterThan(0.2)
  })

  it('keeps backing off through a connect-then-kicked loop: 29.9 s up is not a stable period', () => {
    const clock = new FakeClock()
    const schedule = new ReconnectSchedule(POLICY, STABLE_MS, () => 0)
    const delays: number[] = []
    for (let i = 0; i < 7; i++) {
      schedule.connected(clock.now())
      clock.advanceSync(29_900)
      delays.push(schedule.failed(clock.now()))
    }
    expect(delays).toEqual([1000, 2000, 4000, 8000, 16_000, 30_000, 30_000])
    schedule.connected(clock.now())
    clock.advanceSync(30_000)
    expect(schedule.failed(clock.now())).toBe(1000)
  })

  it("waits at least the relay's `rate-limited: retry in Ns`", () => {
    const schedule = new ReconnectSchedule(POLICY, STABLE_MS, () => 0)
    expect(schedule.failed(0, parseRetryAfterMs('rate-limited: retry in 7s'))).toBe(7000)
    expect(schedule.failed(0, parseRetryAfterMs('rate-limited: retry in 1s'))).toBe(2000)
    expect(parseRetryAfterMs('rate-limited: retry in 250ms')).toBe(250)
    expect(parseRetryAfterMs('rate-limited: slow down')).toBeUndefined()
  })
})

describe('an agent whose relay never answers NIP-11', () => {
  it('rejects start() with discovery-failed after 3 rounds, backing off 1 s then 2 s on its one timer, and ends CLOSED', async () => {
    const clock = new FakeClock()
    const probes: string[] = []
    const agent = new AgentClient({
      relays: ['ws://127.0.0.1:9'],
      secretKey: '11'.repeat(32),
      capabilities: [{ name: 'echo', kinds: [5050] }],
      clock,
      random: () => 0,
      fetch: async (url) => {
        probes.push(String(url))
        throw new TypeError('fetch failed')
      },
    })
    const states: string[] = []
    agent.state$.subscribe((s) => states.push(s.state))
    const started = agent.start().catch((e: unknown) => e)
    await clock.advance(0)
    expect(clock.pending).toBe(1)
    await clock.advance(999)
    expect(probes).toHaveLength(1)
    await clock.advance(1)
    expect(probes).toHaveLength(2)
    await clock.advance(2000)
    const error = await started
    expect(error).toBeInstanceOf(AgentError)
    expect((error as AgentError).code).toBe('discovery-failed')
    expect(probes).toEqual(['http://127.0.0.1:9', 'http://127.0.0.1:9', 'http://127.0.0.1:9'])
    expect(states).toEqual(['INIT', 'INIT', 'INIT', 'CLOSED'])
    expect(clock.pending).toBe(0)
  })

  it('counts a NIP-11 body cut off mid-read as a failed round (retried), not as incompatible', async () => {
    const clock = new FakeClock()
    let probes = 0
    const agent = new AgentClient({
      relays: ['ws://127.0.0.1:9'],
      secretKey: '11'.repeat(32),
      capabilities: [],
      clock,
      random: () => 0,
      fetch: async () => {
        probes++
        const body = new ReadableStream<Uint8Array>({
          start(c) {
            c.enqueue(new TextEncoder().encode('{"supported_nips":[1,'))
            c.error(new TypeError('terminated'))
          },
        })
        return new Response(body, { headers: { 'content-type': 'application/nostr+json' } })
      },
    })
    const started = agent.start().catch((e: unknown) => e)
    await clock.advance(0)
    await clock.advance(1000)
    await clock.advance(2000)
    const error = (await started) as AgentError
    expect(error.code).toBe('discovery-failed')
    expect(probes).toBe(3)
  })

  it('rejects start() with incompatible, without retrying, when NIP-11 lacks NIP-42', async () => {
    const clock = new FakeClock()
    let probes = 0
    const agent = new AgentClient({
      relays: ['ws://127.0.0.1:9'],
      secretKey: new Uint8Array(32).fill(7),
      capabilities: [],
      clock,
      fetch: async () => {
        probes++
        return new Response(JSON.stringify({ supported_nips: [1, 11] }), { headers: { 'content-type': 'application/nostr+json' } })
      },
    })
    const error = (await agent.start().catch((e: unknown) => e)) as AgentError
    expect(error.code).toBe('incompatible')
    expect(error.message).toMatch(/NIP-42/)
    await clock.advance(60_000)
    expect(probes).toBe(1)
    expect(agent.state).toBe('CLOSED')
  })

  it('refuses a bad key and an inconsistent heartbeat gradient at construction', () => {
    const base = { relays: ['ws://x'], capabilities: [] }
    expect(() => new AgentClient({ ...base, secretKey: 'zz' })).toThrow(AgentError)
    expect(() => new AgentClient({ ...base, secretKey: '00'.repeat(32) })).toThrow(/secretKey/)
    expect(() => new AgentClient({ ...base, secretKey: '11'.repeat(32), heartbeatSeconds: 15, leaseSeconds: 29 })).toThrow(/2 × heartbeat/)
    expect(() => new AgentClient({ ...base, secretKey: '11'.repeat(32), leaseSeconds: 45, sessionSeconds: 45 })).toThrow(/sessionSeconds/)
  })
})

describe('an agent whose connection goes silent right after ACTIVE', () => {
  const cleanups: (() => Promise<void>)[] = []
  afterEach(async () => {
    for (const c of cleanups.splice(0)) await c()
  })

  it('does not reset the backoff for time spent SUSPECT or ZOMBIE: only 30 s ACTIVE counts', async () => {
    const clock = new FakeClock()
    let beats = 0
    const r = await startScriptedRelay((f, ws, c) => {
      // connection 0 is kicked during AUTH (its registration, sent behind the AUTH, still arrives); on
      // connection 1 only the first heartbeat is answered
      if (c === 0) return f[0] === 'AUTH' ? ws.close(1011, 'error: restarting') : undefined
      if (f[0] === 'EVENT' && (f[1] as NostrEvent).kind === 20001 && beats++ > 0) return
      okAll(f, ws, c)
    })
    const agent = new AgentClient({ relays: [r.url], secretKey: '11'.repeat(32), capabilities: [], clock, random: () => 0 })
    cleanups.push(
      () => agent.stop(),
      () => r.close(),
    )
    const states: AgentStateChange[] = []
    agent.state$.subscribe((s) => states.push(s))
    const started = agent.start()
    await eventually(() => states.some((s) => s.state === 'INIT' && /reconnecting in 1000 ms/.test(s.cause ?? '')), 'the first failure', {
      timeoutMs: 3000,
    })
    await clock.advance(1000)
    await started
    // 22.5 s ACTIVE, then SUSPECT and ZOMBIE until the 90 s session timeout: more than 30 s up, not 30 s ACTIVE
    for (let i = 0; i < 95; i++) await clock.advance(1000)
    const dropped = states.find((s) => s.state === 'INIT' && /session timeout/.test(s.cause ?? ''))
    expect(dropped?.cause).toMatch(/reconnecting in 2000 ms/)
    expect(states.filter((s) => s.state === 'ZOMBIE')).toHaveLength(1)
  })

  it('CLOSEs a discover() query the relay never ended', async () => {
    const clock = new FakeClock()
    const r = await startScriptedRelay((f, ws, c) => {
      if (f[0] === 'REQ' && String(f[1]).startsWith('agent-q')) return
      okAll(f, ws, c)
    })
    const agent = new AgentClient({ relays: [r.url], secretKey: '11'.repeat(32), capabilities: [], clock })
    cleanups.push(
      () => agent.stop(),
      () => r.close(),
    )
    await agent.start()
    const found = agent.discover('echo').catch((e: unknown) => e)
    await eventually(() => r.connections[0]!.frames.some((f) => f[0] === 'REQ'), 'the query', { timeoutMs: 2000 })
    await clock.advance(10_000)
    expect(await found).toBeInstanceOf(Error)
    await eventually(() => r.connections[0]!.frames.some((f) => f[0] === 'CLOSE'), 'the CLOSE', { timeoutMs: 2000 })
    expect(r.connections[0]!.frames.find((f) => f[0] === 'CLOSE')).toEqual(['CLOSE', 'agent-q1'])
  })
})
