// NIP-98 replay guard for a cluster: `SET NX EX` on the community's nip98 key, so exactly one node (and one
// request) wins an id; the expiry is set in the same command, so a claim can never be left without one.
import type { RedisClient } from '../redis/connect.js'
import { nip98Key } from '../redis/keys.js'
import { callRedis, checkFailsFast } from './redis-gate-client.js'
import { clampReplayTtlSeconds, type ReplayGuard } from './replay-guard.js'

const WHO = 'redis replay guard'

/** `redis` must fail fast (redis-gate-client.ts); every Redis failure rejects with GateError. */
export function createRedisReplayGuard(opts: { redis: RedisClient }): ReplayGuard {
  const { redis } = opts
  checkFailsFast(redis, WHO)
  return {
    async claim(community, eventId, ttlSeconds) {
      const key = nip98Key(community, eventId)
      const ttl = clampReplayTtlSeconds(ttlSeconds)
      const reply = await callRedis(WHO, () => redis.set(key, '1', 'EX', ttl, 'NX'))
      return reply === 'OK' ? 'claimed' : 'replayed'
    },
  }
}
