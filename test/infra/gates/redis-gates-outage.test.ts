// Fault tests: a Redis of our own that we kill, and a fake one that never answers. Gates must fail closed
// (GateError) within a bounded time and serve again after a restart with the very same client.
import { createServer, type Server, type Socket } from 'node:net'
import type { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { GateError, type RateRule } from '../../../src/infra/gates/rate-limit'
import { createRedisPresenceStore } from '../../../src/infra/gates/redis-presence'
import { createRedisRateLimiter } from '../../../src/infra/gates/redis-rate-limit'
import { createRedisReplayGuard } from '../../../src/infra/gates/redis-replay-guard'
import { rateLimitKey } from '../../../src/infra/redis/keys'
import { eventually } from '../../support/eventually'
import { freePort, type PrivateRedis, startPrivateRedis } from '../../support/redis-server'
import { connectRedis, hex64, testCommunity } from '../redis/connect'

const rule: RateRule = { ratePerSecond: 1000, burst: 1000 }
// Far above what a refused command should take (immediate with enableOfflineQueue: false), far below a hang.
const promptlyMs = 1500

async function timed<T>(p: Promise<T>): Promise<{ ms: number; outcome: PromiseSettledResult<T> }> {
  const start = performance.now()
  const [outcome] = await Promise.allSettled([p])
  return { ms: performance.now() - start, outcome: outcome! }
}

function expectGateError(outcome: PromiseSettledResult<unknown>): void {
  expect(outcome.status).toBe('rejected')
  if (outcome.status === 'rejected') expect(outcome.reason).toBeInstanceOf(GateError)
}

describe('redis gates while Redis is down', () => {
  let server: PrivateRedis
  let redis: Redis

  beforeAll(async () => {
    server = await startPrivateRedis()
    redis = await connectRedis({ port: server.port, commandTimeout: 500 })
  })
  afterAll(async () => {
    redis.disconnect()
    await server.stop()
  })

  it('fails closed promptly when Redis dies, and admits again after a restart with the same client', async () => {
    const limiter = createRedisRateLimiter({ redis })
    const key = rateLimitKey(testCommunity(), hex64(), 'events')
    expect(await limiter.admit(key, rule)).toEqual({ allowed: true })

    await server.kill()
    const attempts: Promise<unknown>[] = [
      limiter.admit(key, rule),
      limiter.admitMany([
        { key, rule },
        { key, rule },
      ]),
    ]
    for (const attempt of attempts) {
      const { ms, outcome } = await timed(attempt)
      expectGateError(outcome)
      expect(ms).toBeLessThan(promptlyMs)
    }

    await server.restart()
    // ioredis reconnects on its own (every 50 ms here); the fresh server has an empty script cache
    const admitted = await eventually(
      () => limiter.admit(key, rule).then((a) => a.allowed),
      (allowed) => allowed,
      'an admission once Redis is back',
      { timeoutMs: 5_000, intervalMs: 50 },
    )
    expect(admitted).toBe(true)
    expect(await limiter.admitMany([{ key, rule }])).toEqual([{ allowed: true }])
  })

  it('fails the replay guard and the presence store closed with GateError while Redis is down', async () => {
    const guard = createRedisReplayGuard({ redis })
    const presence = createRedisPresenceStore({ redis })
    const community = testCommunity()
    await server.kill()
    try {
      const attempts: Promise<unknown>[] = [
        guard.claim(community, hex64(), 120),
        presence.set(community, hex64(), 'online', 30),
        presence.get(community, [hex64()]),
        presence.clear(community, hex64()),
      ]
      for (const attempt of attempts) {
        const { ms, outcome } = await timed(attempt)
        expectGateError(outcome)
        expect(ms).toBeLessThan(promptlyMs)
      }
    } finally {
      await server.restart()
    }
  })
})

describe('redis gates when Redis accepts but never answers (partition, stalled server)', () => {
  let silent: Server
  let port: number
  const sockets = new Set<Socket>()

  beforeAll(async () => {
    port = await freePort()
    silent = createServer((s) => {
      sockets.add(s)
      s.on('error', () => {})
    })
    await new Promise<void>((resolve) => silent.listen(port, '127.0.0.1', resolve))
  })
  afterAll(async () => {
    for (const s of sockets) s.destroy()
    await new Promise((resolve) => silent.close(resolve))
  })

  it('fails closed after commandTimeout even with the offline queue on', async () => {
    // enableReadyCheck off: the client counts as ready once TCP connects, so the command is really sent
    const redis = await connectRedis({ port, enableReadyCheck: false, enableOfflineQueue: true, commandTimeout: 300 })
    try {
      const limiter = createRedisRateLimiter({ redis })
      const { ms, outcome } = await timed(limiter.admit(rateLimitKey(testCommunity(), hex64(), 'api'), rule))
      expectGateError(outcome)
      expect(ms).toBeGreaterThanOrEqual(250)
      expect(ms).toBeLessThan(promptlyMs)
    } finally {
      redis.disconnect()
    }
  })
})
