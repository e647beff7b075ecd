import type { Redis } from 'ioredis'
import { Redis as RedisClient } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { type Admission, GateError, type RateLimiter, type RateRule } from '../../../src/infra/gates/rate-limit'
import { type AdmitRequest, createRedisRateLimiter } from '../../../src/infra/gates/redis-rate-limit'
import { rateLimitKey } from '../../../src/infra/redis/keys'
import { connectRedis, hex64, testCommunity } from '../redis/connect'
import { describeRateLimiterContract } from './rate-limit.contract'

// Refill of one token per ~17 minutes: nothing refills during a test.
const slow = (burst: number): RateRule => ({ ratePerSecond: 0.001, burst })

let redis: Redis
let nodeB: Redis
const created = new Set<string>()

// The contract picks its own key names; remember them so the shared Redis is left as we found it.
function tracked(limiter: RateLimiter): RateLimiter {
  return {
    keyOf: (budget) => limiter.keyOf(budget),
    admit: (key, rule, cost) => {
      created.add(key)
      return limiter.admit(key, rule, cost)
    },
    close: () => limiter.close(),
  }
}

function newKey(type: 'events' | 'reqs' | 'api' = 'events'): string {
  const key = rateLimitKey(testCommunity('rl'), hex64(), type)
  created.add(key)
  return key
}

beforeAll(async () => {
  redis = await connectRedis()
  nodeB = await connectRedis()
})
afterAll(async () => {
  if (created.size > 0) await redis.del(...created)
  redis.disconnect()
  nodeB.disconnect()
})

describeRateLimiterContract('redis', () => tracked(createRedisRateLimiter({ redis })), { realClock: true })

/** Counts the script calls (EVALSHA, or EVAL after NOSCRIPT) the limiter sends through the shared client. */
function scriptCalls() {
  const spy = vi.spyOn(redis, 'sendCommand')
  return {
    count: () => spy.mock.calls.filter(([c]) => c.name === 'evalsha' || c.name === 'eval').length,
    restore: () => spy.mockRestore(),
  }
}

describe('redis rate limiter keys', () => {
  it('gives every key it admits an expiry: when its bucket is full again', async () => {
    const limiter = createRedisRateLimiter({ redis })
    const key = newKey()
    expect(await limiter.admit(key, { ratePerSecond: 10, burst: 5 }, 3)).toEqual({ allowed: true })
    const pttl = await redis.pttl(key)
    expect(pttl).toBeGreaterThan(250)
    expect(pttl).toBeLessThanOrEqual(300)
  })

  it.each([
    ['a refused request', slow(1), false],
    ['an admitted request', slow(5), true],
  ])('repairs a key found without an expiry on %s, and logs it', async (_what, rule, allowed) => {
    const warn = vi.fn()
    const limiter = createRedisRateLimiter({ redis, log: { warn } })
    const key = newKey()
    await limiter.admit(key, rule)
    await redis.persist(key)
    expect(await redis.pttl(key)).toBe(-1)
    expect((await limiter.admit(key, rule)).allowed).toBe(allowed)
    expect(await redis.pttl(key)).toBeGreaterThan(0)
    expect(warn).toHaveBeenCalledWith({ key }, expect.stringContaining('no expiry'))
  })

  it('deletes a planted key without expiry that holds no debt, even for a cost-0 probe', async () => {
    const warn = vi.fn()
    const key = newKey()
    await redis.set(key, 'junk')
    expect(await createRedisRateLimiter({ redis, log: { warn } }).admit(key, slow(1), 0)).toEqual({ allowed: true })
    expect(await redis.exists(key)).toBe(0)
    expect(warn).toHaveBeenCalledTimes(1)
  })
})

describe('redis rate limiter across nodes', () => {
  it('admits exactly burst in total when two nodes race 40 requests for one key', async () => {
    const a = createRedisRateLimiter({ redis })
    const b = createRedisRateLimiter({ redis: nodeB })
    const key = newKey()
    const attempts = Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).admit(key, slow(10)))
    const admitted = (await Promise.all(attempts)).filter((x) => x.allowed).length
    expect(admitted).toBe(10)
  })
})

describe('redis rate limiter batches (admitMany)', () => {
  // Same shapes on two fresh key sets: one batch vs one admit at a time.
  const shape = (keys: string[]): AdmitRequest[] => [
    { key: keys[0]!, rule: slow(3) },
    { key: keys[0]!, rule: slow(3), cost: 2 },
    { key: keys[1]!, rule: slow(2), cost: 5 },
    { key: keys[0]!, rule: slow(3) },
    { key: keys[1]!, rule: slow(2), cost: 0 },
    { key: keys[2]!, rule: { ratePerSecond: 10, burst: 2 }, cost: 2 },
    { key: keys[2]!, rule: { ratePerSecond: 10, burst: 2 } },
    { key: keys[1]!, rule: slow(2), cost: 2 },
  ]

  it('decides a batch exactly as the same admits one after the other, in one round trip', async () => {
    const limiter = createRedisRateLimiter({ redis })
    const batchKeys = [newKey(), newKey('reqs'), newKey('api')]
    const calls = scriptCalls()
    const batch = await limiter.admitMany(shape(batchKeys))
    expect(calls.count()).toBe(1)
    calls.restore()
    const sequential: Admission[] = []
    for (const r of shape([newKey(), newKey('reqs'), newKey('api')])) sequential.push(await limiter.admit(r.key, r.rule, r.cost))
    // retry delays shrink by the ms that pass between the two runs: compare them coarsely
    const coarse = (xs: Admission[]) =>
      xs.map((x) => (x.allowed ? 0 : Number.isFinite(x.retryAfterMs) ? Math.round(x.retryAfterMs / 1000) : x.retryAfterMs))
    expect(batch.map((x) => x.allowed)).toEqual([true, true, false, false, true, true, false, true])
    expect(coarse(batch)).toEqual(coarse(sequential))
  })

  it('answers an empty batch, or one of never-admissible costs, without asking Redis', async () => {
    const limiter = createRedisRateLimiter({ redis })
    const calls = scriptCalls()
    expect(await limiter.admitMany([])).toEqual([])
    expect(await limiter.admitMany([{ key: newKey(), rule: slow(1), cost: 2 }])).toEqual([{ allowed: false, retryAfterMs: Infinity }])
    expect(calls.count()).toBe(0)
    calls.restore()
  })

  it('sends the admits of one turn in one script call, at most 128 keys each, every one decided as alone', async () => {
    const limiter = createRedisRateLimiter({ redis })
    const keys = Array.from({ length: 300 }, () => newKey())
    const calls = scriptCalls()
    // each key twice in the same turn, burst 1: the first is admitted, the second refused
    const answers = await Promise.all([...keys, ...keys].map((k) => limiter.admit(k, slow(1))))
    expect(calls.count()).toBe(5)
    calls.restore()
    expect(answers.slice(0, 300).every((a) => a.allowed)).toBe(true)
    expect(answers.slice(300).every((a) => !a.allowed && a.retryAfterMs > 0)).toBe(true)
  })
})

describe('redis rate limiter misuse', () => {
  it('refuses a client that would queue commands through an outage (RangeError at construction)', () => {
    const queueing = new RedisClient({ lazyConnect: true })
    expect(() => createRedisRateLimiter({ redis: queueing })).toThrow(RangeError)
    const timed = new RedisClient({ lazyConnect: true, commandTimeout: 500 })
    expect(() => createRedisRateLimiter({ redis: timed })).not.toThrow()
    queueing.disconnect()
    timed.disconnect()
  })

  it('refuses the same bad rules as the memory backend (RangeError), in admit and admitMany', async () => {
    const limiter = createRedisRateLimiter({ redis })
    await expect(limiter.admit(newKey(), { ratePerSecond: 0, burst: 1 })).rejects.toBeInstanceOf(RangeError)
    await expect(limiter.admit(newKey(), { ratePerSecond: 1, burst: 0 })).rejects.toBeInstanceOf(RangeError)
    await expect(limiter.admitMany([{ key: newKey(), rule: slow(1), cost: -1 }])).rejects.toBeInstanceOf(RangeError)
  })

  it('fails closed with GateError once closed, without touching the shared client', async () => {
    const limiter = createRedisRateLimiter({ redis })
    await limiter.close()
    await expect(limiter.admit(newKey(), slow(1))).rejects.toBeInstanceOf(GateError)
    await expect(limiter.admitMany([{ key: newKey(), rule: slow(1) }])).rejects.toBeInstanceOf(GateError)
    expect(await redis.ping()).toBe('PONG')
  })

  it('turns an error reply (a key of another type) into GateError', async () => {
    const key = newKey()
    await redis.hset(key, 'f', 'v')
    await expect(createRedisRateLimiter({ redis }).admit(key, slow(1))).rejects.toBeInstanceOf(GateError)
  })
})
