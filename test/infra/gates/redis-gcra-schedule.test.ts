// The Lua script with Redis TIME replaced by a clock the test sets, held to the memory backend's exact
// schedule (memory-rate-limit.test.ts) and to the same continuous token-bucket reference.
import fc from 'fast-check'
import type { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createMemoryRateLimiter } from '../../../src/infra/gates/memory-rate-limit'
import type { Admission, RateRule } from '../../../src/infra/gates/rate-limit'
import { gcraLua } from '../../../src/infra/gates/redis-rate-limit'
import { rateLimitKey } from '../../../src/infra/redis/keys'
import { connectRedis, hex64, testCommunity } from '../redis/connect'

const TIME_CALL = "redis.call('TIME')"
const EXPIRY_SET = "'PX', math.max(1, math.ceil(aheadMs))"
// An arbitrary Redis wall clock (2027) for t = 0: the script must only depend on differences.
const baseSeconds = 1_800_000_000

let redis: Redis
const created: string[] = []

beforeAll(async () => {
  redis = await connectRedis()
  expect(gcraLua).toContain(TIME_CALL)
  expect(gcraLua).toContain(EXPIRY_SET)
  // The stubbed clock runs apart from Redis's own: an expiry of "when the bucket is full again" (often 100 ms)
  // would lapse in REAL time whenever the machine is slow between two steps, and Redis would hand the script
  // a fresh key the memory backend doesn't have. A key kept longer decides the same (a past TAT = a full
  // bucket), so the stub only stretches the expiry; the expiry itself is checked in redis-rate-limit.test.ts.
  const lua = gcraLua.replace(TIME_CALL, '{ARGV[4], ARGV[5]}').replace(EXPIRY_SET, `${EXPIRY_SET} + 600000`)
  redis.defineCommand('gcraAtTime', { numberOfKeys: 1, lua })
})
afterAll(async () => {
  for (let i = 0; i < created.length; i += 500) await redis.del(...created.slice(i, i + 500))
  redis.disconnect()
})

/** admit at `tMs` on the stubbed clock (whole ms, as TIME's µs allow) */
function stubbed() {
  const key = rateLimitKey(testCommunity('gcra'), hex64(), 'events')
  created.push(key)
  return async (tMs: number, rule: RateRule, cost = 1): Promise<Admission> => {
    const seconds = baseSeconds + Math.floor(tMs / 1000)
    const micros = (tMs % 1000) * 1000
    const client = redis as unknown as { gcraAtTime(...a: unknown[]): Promise<number[]> }
    const [allowed, retryAfterMs] = await client.gcraAtTime(key, 1000 / rule.ratePerSecond, rule.burst, cost, seconds, micros)
    return allowed === 1 ? { allowed: true } : { allowed: false, retryAfterMs: retryAfterMs! }
  }
}

describe('redis GCRA script (TIME stubbed)', () => {
  it('follows the exact GCRA schedule of the memory backend: 10/s with burst 3', async () => {
    const at = stubbed()
    const rule: RateRule = { ratePerSecond: 10, burst: 3 }
    const schedule: [number, Admission][] = [
      [0, { allowed: true }],
      [0, { allowed: true }],
      [0, { allowed: true }],
      [0, { allowed: false, retryAfterMs: 100 }],
      [99, { allowed: false, retryAfterMs: 1 }],
      [100, { allowed: true }],
      [100, { allowed: false, retryAfterMs: 100 }],
      [350, { allowed: true }],
      [350, { allowed: true }],
      [350, { allowed: false, retryAfterMs: 50 }],
    ]
    for (const [t, want] of schedule) expect(await at(t, rule)).toEqual(want)
  })

  it('rounds a fractional interval up (3/s → 334 ms) and admits a fresh key under a very slow rule', async () => {
    const at = stubbed()
    expect(await at(0, { ratePerSecond: 3, burst: 1 })).toEqual({ allowed: true })
    expect(await at(0, { ratePerSecond: 3, burst: 1 })).toEqual({ allowed: false, retryAfterMs: 334 })
    expect((await at(333, { ratePerSecond: 3, burst: 1 })).allowed).toBe(false)
    expect((await at(334, { ratePerSecond: 3, burst: 1 })).allowed).toBe(true)
    const slow = stubbed()
    expect(await slow(987_654_321, { ratePerSecond: 0.001, burst: 1 })).toEqual({ allowed: true })
    expect(await slow(987_654_321, { ratePerSecond: 0.001, burst: 1 })).toEqual({ allowed: false, retryAfterMs: 1_000_000 })
  })

  it('never refuses a client sending at exactly ratePerSecond', async () => {
    const at = stubbed()
    for (let i = 0; i < 300; i++) expect((await at(i * 20, { ratePerSecond: 50, burst: 1 })).allowed).toBe(true)
  })

  it('decides exactly as the memory backend on random traffic (property)', async () => {
    // bursts (no time passing), gaps near one interval and long idles, so boundaries are actually visited
    const dtMs = fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 120 }), fc.integer({ min: 0, max: 1500 }))
    const step = fc.record({ dtMs, cost: fc.integer({ min: 0, max: 10 }) })
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(1, 2, 3, 4, 5, 7, 10, 20, 50, 100, 1000),
        fc.integer({ min: 1, max: 10 }),
        fc.array(step, { minLength: 10, maxLength: 40 }),
        async (ratePerSecond, burst, steps) => {
          const at = stubbed()
          const clock = { t: 0 }
          const memory = createMemoryRateLimiter({ now: () => clock.t })
          const rule = { ratePerSecond, burst }
          for (const { dtMs, cost } of steps) {
            clock.t += dtMs
            const want = await memory.admit('k', rule, cost)
            // never-admissible costs are answered before the script; the script never sees them
            if (cost > burst) continue
            expect(await at(clock.t, rule, cost)).toEqual(want)
          }
        },
      ),
      { numRuns: 100 },
    )
  })
})
