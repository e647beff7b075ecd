import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createMemoryRateLimiter } from '../../../src/infra/gates/memory-rate-limit'
import { GateError, type RateRule } from '../../../src/infra/gates/rate-limit'
import { describeRateLimiterContract } from './rate-limit.contract'

describeRateLimiterContract('memory', (now) => createMemoryRateLimiter({ now }))
// The same suite as a Redis backend will see it: the injected clock ignored, time passing for real.
describeRateLimiterContract('memory on its own clock', () => createMemoryRateLimiter(), { realClock: true })

function clocked(maxKeys?: number) {
  const clock = { t: 0 }
  const limiter = createMemoryRateLimiter({ now: () => clock.t, maxKeys })
  return { clock, limiter }
}

describe('memory rate limiter timing (GCRA, injected clock)', () => {
  it('follows the exact GCRA schedule: 10/s with burst 3', async () => {
    const { clock, limiter } = clocked()
    const rule: RateRule = { ratePerSecond: 10, burst: 3 }
    const at = async (ms: number) => {
      clock.t = ms
      return limiter.admit('k', rule)
    }
    expect(await at(0)).toEqual({ allowed: true })
    expect(await at(0)).toEqual({ allowed: true })
    expect(await at(0)).toEqual({ allowed: true })
    expect(await at(0)).toEqual({ allowed: false, retryAfterMs: 100 })
    expect(await at(99)).toEqual({ allowed: false, retryAfterMs: 1 })
    expect(await at(100)).toEqual({ allowed: true })
    expect(await at(100)).toEqual({ allowed: false, retryAfterMs: 100 })
    expect(await at(350)).toEqual({ allowed: true })
    expect(await at(350)).toEqual({ allowed: true })
    expect(await at(350)).toEqual({ allowed: false, retryAfterMs: 50 })
  })

  it('asks a request of cost n to wait for n − (tokens left) emission intervals', async () => {
    const { clock, limiter } = clocked()
    const rule: RateRule = { ratePerSecond: 10, burst: 5 }
    expect(await limiter.admit('k', rule, 4)).toEqual({ allowed: true })
    expect(await limiter.admit('k', rule, 4)).toEqual({ allowed: false, retryAfterMs: 300 })
    clock.t = 299
    expect((await limiter.admit('k', rule, 4)).allowed).toBe(false)
    clock.t = 300
    expect(await limiter.admit('k', rule, 4)).toEqual({ allowed: true })
  })

  it('rounds a fractional interval up, so retrying after retryAfterMs succeeds (3/s → 334 ms)', async () => {
    const { clock, limiter } = clocked()
    const rule: RateRule = { ratePerSecond: 3, burst: 1 }
    expect((await limiter.admit('k', rule)).allowed).toBe(true)
    expect(await limiter.admit('k', rule)).toEqual({ allowed: false, retryAfterMs: 334 })
    clock.t = 333
    expect((await limiter.admit('k', rule)).allowed).toBe(false)
    clock.t = 334
    expect((await limiter.admit('k', rule)).allowed).toBe(true)
  })

  it('admits a fresh key under a very slow rule whatever the clock reads (no float rounding)', async () => {
    const { clock, limiter } = clocked()
    for (const [i, t] of [123_456.789, 8_765_432.1, 1.1].entries()) {
      clock.t = t
      expect(await limiter.admit(`k${i}`, { ratePerSecond: 0.001, burst: 1 })).toEqual({ allowed: true })
      expect(await limiter.admit(`k${i}`, { ratePerSecond: 0.001, burst: 1 })).toEqual({
        allowed: false,
        retryAfterMs: 1_000_000,
      })
    }
  })

  it('never refuses a client sending at exactly ratePerSecond', async () => {
    const { clock, limiter } = clocked()
    const rule: RateRule = { ratePerSecond: 50, burst: 1 }
    for (let i = 0; i < 1000; i++) {
      clock.t = i * 20
      expect((await limiter.admit('k', rule)).allowed).toBe(true)
    }
  })

  it('decides exactly like a token bucket that refills continuously (property)', async () => {
    // Reference kept in integer "ms of credit" (one token = intervalMs) so it has no rounding of its own.
    const step = fc.record({ dtMs: fc.integer({ min: 0, max: 1500 }), cost: fc.integer({ min: 0, max: 12 }) })
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(1, 2, 4, 5, 10, 20, 50, 100, 1000),
        fc.integer({ min: 1, max: 10 }),
        fc.array(step, { maxLength: 60 }),
        async (ratePerSecond, burst, steps) => {
          const { clock, limiter } = clocked()
          const intervalMs = 1000 / ratePerSecond
          let credit = burst * intervalMs
          for (const { dtMs, cost } of steps) {
            clock.t += dtMs
            credit = Math.min(burst * intervalMs, credit + dtMs)
            const expected = credit >= cost * intervalMs
            if (expected) credit -= cost * intervalMs
            const got = await limiter.admit('k', { ratePerSecond, burst }, cost)
            expect(got.allowed).toBe(expected)
            if (!got.allowed && cost <= burst) expect(got.retryAfterMs).toBe(cost * intervalMs - credit)
          }
        },
      ),
      { numRuns: 200 },
    )
  })
})

describe('memory rate limiter memory bound', () => {
  it('holds at most maxKeys keys while a flood of new keys arrives', async () => {
    const { limiter } = clocked(100)
    for (let i = 0; i < 5000; i++) {
      await limiter.admit(`flood-${i}`, { ratePerSecond: 0.001, burst: 1 })
      expect(limiter.size).toBeLessThanOrEqual(100)
    }
  })

  it('drops keys whose bucket has refilled before any key that is still limited', async () => {
    const { clock, limiter } = clocked(10)
    const limited: RateRule = { ratePerSecond: 0.001, burst: 1 }
    for (let i = 0; i < 5; i++) await limiter.admit(`limited-${i}`, limited)
    for (let i = 0; i < 5; i++) await limiter.admit(`brief-${i}`, { ratePerSecond: 1000, burst: 1 })
    clock.t = 10
    for (let i = 0; i < 5; i++) await limiter.admit(`new-${i}`, limited)
    expect(limiter.size).toBeLessThanOrEqual(10)
    for (let i = 0; i < 5; i++) expect((await limiter.admit(`limited-${i}`, limited)).allowed).toBe(false)
  })

  it('never hands back a spent bucket full, however many new keys flood the table', async () => {
    const { clock, limiter } = clocked(1_000)
    const rule: RateRule = { ratePerSecond: 1, burst: 5 }
    for (let i = 0; i < 5; i++) expect((await limiter.admit('attacker', rule)).allowed).toBe(true)
    for (let i = 0; i < 20_000; i++) {
      clock.t = i / 100 // 200 ms of flood, far less than the 5 s the spent bucket needs to refill
      await limiter.admit(`fresh-${i}`, rule)
    }
    expect(await limiter.admit('attacker', rule)).toMatchObject({ allowed: false })
    expect(limiter.size).toBeLessThanOrEqual(1_000)
  })

  it('refuses a new key while every held key is live, and admits it once the earliest has refilled', async () => {
    const { clock, limiter } = clocked(100)
    const rule: RateRule = { ratePerSecond: 1, burst: 1 } // a taken token refills in 1 s
    for (let i = 0; i < 100; i++) {
      clock.t = i
      expect((await limiter.admit(`held-${i}`, rule)).allowed).toBe(true)
    }
    clock.t = 500
    const refused = await limiter.admit('newcomer', rule)
    expect(refused).toEqual({ allowed: false, retryAfterMs: 500 })
    expect(limiter.refusedForRoom).toBe(1)
    // a key it already holds is decided as always
    expect((await limiter.admit('held-99', rule)).allowed).toBe(false)
    clock.t = 1_000
    expect((await limiter.admit('newcomer', rule)).allowed).toBe(true)
  })

  it('shrinks to the live keys under churn, long before reaching maxKeys', async () => {
    const { clock, limiter } = clocked()
    for (let i = 0; i < 1000; i++) {
      clock.t = i
      await limiter.admit(`visitor-${i}`, { ratePerSecond: 100, burst: 1 })
    }
    // each key stays live for one 10 ms interval; one admission per ms keeps about ten alive
    expect(limiter.size).toBeLessThanOrEqual(12)
  })
})

describe('memory rate limiter misuse', () => {
  it('refuses a rule without a positive rate or with burst below one as a programming error', async () => {
    const { limiter } = clocked()
    await expect(limiter.admit('k', { ratePerSecond: 0, burst: 1 })).rejects.toBeInstanceOf(RangeError)
    await expect(limiter.admit('k', { ratePerSecond: 1, burst: 0 })).rejects.toBeInstanceOf(RangeError)
    await expect(limiter.admit('k', { ratePerSecond: 1, burst: 1 }, -1)).rejects.toBeInstanceOf(RangeError)
  })

  it('fails closed with GateError once closed', async () => {
    const { limiter } = clocked()
    await limiter.close()
    await expect(limiter.admit('k', { ratePerSecond: 1, burst: 1 })).rejects.toBeInstanceOf(GateError)
  })
})
