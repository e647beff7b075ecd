import type { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createMemoryReplayGuard } from '../../../src/infra/gates/memory-replay-guard'
import { createRedisReplayGuard } from '../../../src/infra/gates/redis-replay-guard'
import { clampReplayTtlSeconds } from '../../../src/infra/gates/replay-guard'
import { nip98Key } from '../../../src/infra/redis/keys'
import { connectRedis, hex64, testCommunity } from '../redis/connect'
import { describeReplayGuardContract } from './replay-guard.contract'

let redis: Redis
let nodeB: Redis
beforeAll(async () => {
  redis = await connectRedis()
  nodeB = await connectRedis()
})
afterAll(() => {
  redis.disconnect()
  nodeB.disconnect()
})

describeReplayGuardContract('memory', () => createMemoryReplayGuard())
describeReplayGuardContract('redis', () => createRedisReplayGuard({ redis }))

describe('replay guard TTL clamp', () => {
  it.each([
    [-1, 181],
    [0, 181],
    [180.2, 181],
    [181, 181],
    [181.1, 182],
    [3599.5, 3600],
    [3600, 3600],
    [3601, 3600],
    [Infinity, 3600],
  ])('claims with TTL %s for %s s', (asked, got) => {
    expect(clampReplayTtlSeconds(asked)).toBe(got)
  })
})

describe('memory replay guard expiry (injected clock)', () => {
  it('holds a claim for at least 181 s and at most 3600 s', async () => {
    const clock = { t: 0 }
    const guard = createMemoryReplayGuard({ now: () => clock.t })
    const [c, short, long] = [testCommunity(), hex64(), hex64()]
    await guard.claim(c, short, 1)
    await guard.claim(c, long, 86_400)
    clock.t = 180_999
    expect(await guard.claim(c, short, 1)).toBe('replayed')
    clock.t = 181_000
    expect(await guard.claim(c, short, 1)).toBe('claimed')
    clock.t = 3_599_999
    expect(await guard.claim(c, long, 1)).toBe('replayed')
    clock.t = 3_600_000
    expect(await guard.claim(c, long, 1)).toBe('claimed')
  })

  it('holds at most maxEntries claims while a flood of new ids arrives, keeping the newest', async () => {
    const guard = createMemoryReplayGuard({ now: () => 0, maxEntries: 100 })
    const c = testCommunity()
    const ids = Array.from({ length: 1000 }, hex64)
    for (const id of ids) {
      await guard.claim(c, id, 3600)
      expect(guard.size).toBeLessThanOrEqual(100)
    }
    expect(await guard.claim(c, ids.at(-1)!, 3600)).toBe('replayed')
  })

  it('shrinks to the live claims under churn', async () => {
    const clock = { t: 0 }
    const guard = createMemoryReplayGuard({ now: () => clock.t })
    for (let i = 0; i < 1000; i++) {
      clock.t = i * 1000
      await guard.claim(testCommunity(), hex64(), 181)
    }
    // one claim per second, each live for 181 s
    expect(guard.size).toBeLessThanOrEqual(183)
  })
})

describe('redis replay guard', () => {
  it.each([
    [1, 181],
    [300, 300],
    [99_999, 3600],
  ])('stores a claim asked for %s s with a TTL of %s s', async (asked, seconds) => {
    const [community, id] = [testCommunity(), hex64()]
    await createRedisReplayGuard({ redis }).claim(community, id, asked)
    const key = nip98Key(community, id)
    const pttl = await redis.pttl(key)
    expect(pttl).toBeGreaterThan(seconds * 1000 - 2000)
    expect(pttl).toBeLessThanOrEqual(seconds * 1000)
    await redis.del(key)
  })

  it('lets one node win an id that two nodes claim at once', async () => {
    const [a, b] = [createRedisReplayGuard({ redis }), createRedisReplayGuard({ redis: nodeB })]
    const [c, id] = [testCommunity(), hex64()]
    const outcomes = await Promise.all([a.claim(c, id, 120), b.claim(c, id, 120), a.claim(c, id, 120), b.claim(c, id, 120)])
    expect(outcomes.sort()).toEqual(['claimed', 'replayed', 'replayed', 'replayed'])
  })
})
