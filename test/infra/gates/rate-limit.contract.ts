// Behaviour every RateLimiter backend owes (docs/architecture.md §8), run against each backend by its own test file.
// Backends that keep their own time (Redis uses TIME) ignore `now`: pass { realClock: true } and advance()
// also sleeps for real. Cases are therefore phrased in token counts with rules whose refill is either
// negligible for the test's duration or a whole emission interval; exact-ms cases live in the memory file.
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { RateLimiter, RateRule } from '../../../src/infra/gates/rate-limit'

export interface RateLimiterContractOptions {
  /** the backend ignores the injected clock, so advancing time means waiting */
  realClock?: boolean
}

// Refill of one token per ~17 minutes: nothing refills during a test, whichever clock the backend reads.
const slow = (burst: number): RateRule => ({ ratePerSecond: 0.001, burst })

export function describeRateLimiterContract(
  name: string,
  make: (now: () => number) => RateLimiter,
  opts: RateLimiterContractOptions = {},
): void {
  describe(`${name} rate limiter (contract)`, () => {
    // Keys are unique per test and run, so backends that share a database (Redis) never see stale state.
    const run = `${process.pid}-${Date.now()}`
    let testNo = 0
    let t = 1_000_000
    let limiter: RateLimiter
    let prefix: string
    const key = (k: string): string => `${prefix}:${k}`
    const advance = async (ms: number): Promise<void> => {
      t += ms
      // Timers run on libuv's whole-ms clock and may fire up to 1 ms early by a finer one (performance.now,
      // Redis TIME in µs): the margin makes advance() wait *at least* ms.
      if (opts.realClock) await new Promise((resolve) => setTimeout(resolve, ms + 2))
    }
    const admitMany = async (k: string, rule: RateRule, attempts: number): Promise<number> => {
      let admitted = 0
      for (let i = 0; i < attempts; i++) if ((await limiter.admit(key(k), rule)).allowed) admitted++
      return admitted
    }

    beforeEach(() => {
      prefix = `contract:${run}:${++testNo}`
      limiter = make(() => t)
    })
    afterEach(async () => {
      await limiter.close()
    })

    it('admits a full burst at once, then refuses with a positive retry delay', async () => {
      const rule: RateRule = { ratePerSecond: 1, burst: 5 }
      expect(await admitMany('a', rule, 5)).toBe(5)
      const refused = await limiter.admit(key('a'), rule)
      expect(refused.allowed).toBe(false)
      if (refused.allowed) return
      expect(refused.retryAfterMs).toBeGreaterThan(0)
      expect(refused.retryAfterMs).toBeLessThanOrEqual(1000)
    })

    it('admits exactly burst requests (the limit) and refuses request burst + 1', async () => {
      expect(await admitMany('a', slow(7), 8)).toBe(7)
      expect(await admitMany('b', slow(1), 2)).toBe(1)
    })

    it('admits a cost equal to burst on a fresh key and refuses burst + 1 as never admissible', async () => {
      expect(await limiter.admit(key('a'), slow(4), 4)).toEqual({ allowed: true })
      expect(await limiter.admit(key('b'), slow(4), 5)).toEqual({ allowed: false, retryAfterMs: Infinity })
      expect(await admitMany('b', slow(4), 5)).toBe(4)
    })

    it('takes `cost` tokens per request', async () => {
      const rule = slow(5)
      expect((await limiter.admit(key('a'), rule, 3)).allowed).toBe(true)
      expect((await limiter.admit(key('a'), rule, 3)).allowed).toBe(false)
      expect((await limiter.admit(key('a'), rule, 2)).allowed).toBe(true)
      expect((await limiter.admit(key('a'), rule, 1)).allowed).toBe(false)
    })

    it('takes nothing from a refused request', async () => {
      const rule = slow(3)
      expect((await limiter.admit(key('a'), rule, 2)).allowed).toBe(true)
      for (let i = 0; i < 5; i++) expect((await limiter.admit(key('a'), rule, 2)).allowed).toBe(false)
      expect((await limiter.admit(key('a'), rule, 1)).allowed).toBe(true)
    })

    it('keeps keys independent: draining one leaves the others a full burst', async () => {
      expect(await admitMany('a', slow(3), 4)).toBe(3)
      expect(await admitMany('b', slow(3), 4)).toBe(3)
      expect(await admitMany('c', slow(3), 4)).toBe(3)
    })

    it('refills one token per emission interval', async () => {
      // 1.1 intervals: on a real clock the test may stall ~90 ms before a second token would be earned
      const rule: RateRule = { ratePerSecond: 10, burst: 2 }
      expect(await admitMany('a', rule, 2)).toBe(2)
      expect((await limiter.admit(key('a'), rule)).allowed).toBe(false)
      await advance(110)
      expect((await limiter.admit(key('a'), rule)).allowed).toBe(true)
      expect((await limiter.admit(key('a'), rule)).allowed).toBe(false)
    })

    it('admits a retry made retryAfterMs later', async () => {
      const rule: RateRule = { ratePerSecond: 20, burst: 1 }
      expect((await limiter.admit(key('a'), rule)).allowed).toBe(true)
      const refused = await limiter.admit(key('a'), rule)
      if (refused.allowed) throw new Error('expected a refusal')
      expect(refused.retryAfterMs).toBeLessThanOrEqual(51)
      await advance(refused.retryAfterMs)
      expect((await limiter.admit(key('a'), rule)).allowed).toBe(true)
    })

    it('refills to no more than burst however long the key sits idle', async () => {
      const rule: RateRule = { ratePerSecond: 20, burst: 3 }
      expect(await admitMany('a', rule, 3)).toBe(3)
      await advance(250)
      expect(await admitMany('a', rule, 10)).toBe(3)
    })

    it('has no window edge: a second burst right after the first gets at most one token', async () => {
      // A fixed one-second window would admit 10 just before its end and 10 more just after.
      const rule: RateRule = { ratePerSecond: 10, burst: 10 }
      if (!opts.realClock) t += 990 - (t % 1000)
      expect(await admitMany('a', rule, 10)).toBe(10)
      await advance(20)
      expect(await admitMany('a', rule, 10)).toBeLessThanOrEqual(1)
    })

    it('names one budget per IP whatever its spelling, and keeps every other budget apart', () => {
      const pk = 'ab'.repeat(32)
      const v4 = ['203.0.113.7', '::ffff:203.0.113.7', '0:0:0:0:0:ffff:cb00:7107']
      expect(new Set(v4.map((ip) => limiter.keyOf({ ip, limit: 'conn' }))).size).toBe(1)
      expect(
        new Set(['::1', '0:0::1', '0000::0001'].map((ip) => limiter.keyOf({ community: 'acme', principal: `ip:${ip}`, limit: 'reqs' })))
          .size,
      ).toBe(1)
      const keys = [
        limiter.keyOf({ ip: '203.0.113.7', limit: 'conn' }),
        limiter.keyOf({ ip: '203.0.113.7', limit: 'api' }),
        limiter.keyOf({ community: 'acme', principal: 'ip:203.0.113.7', limit: 'api' }),
        limiter.keyOf({ community: 'acme', principal: pk, limit: 'events' }),
        limiter.keyOf({ community: 'acme', principal: pk, limit: 'reqs' }),
        limiter.keyOf({ community: 'acme', principal: pk, limit: 'api' }),
        limiter.keyOf({ community: 'acme-2', principal: pk, limit: 'events' }),
      ]
      expect(new Set(keys).size).toBe(keys.length)
    })

    it('refuses a non-canonical pubkey, community or address as a bug (RangeError)', () => {
      const pk = 'ab'.repeat(32)
      expect(() => limiter.keyOf({ community: 'acme', principal: pk.toUpperCase(), limit: 'events' })).toThrow(RangeError)
      expect(() => limiter.keyOf({ community: 'Acme', principal: pk, limit: 'events' })).toThrow(RangeError)
      expect(() => limiter.keyOf({ community: 'acme', principal: 'npub1', limit: 'reqs' })).toThrow(RangeError)
      expect(() => limiter.keyOf({ ip: 'relay.example', limit: 'conn' })).toThrow(RangeError)
    })
  })
}
