// Presence for a cluster: one key per (community, pubkey) with the status as value and EX as its lifetime,
// so Redis drops silent pubkeys by itself. A community's keys share a hash slot ({community} tag), which
// is what lets one MGET read many pubkeys in cluster mode.
import type { Redis } from 'ioredis'
import { presenceKey } from '../redis/keys'
import { type PresenceStore, toPresenceTtlSeconds } from './presence'
import { callRedis, checkFailsFast } from './redis-gate-client'

const WHO = 'redis presence store'

/** `redis` must fail fast (redis-gate-client.ts); every Redis failure rejects with GateError. */
export function createRedisPresenceStore(opts: { redis: Redis }): PresenceStore {
  const { redis } = opts
  checkFailsFast(redis, WHO)
  return {
    async set(community, pubkey, status, ttlSeconds) {
      const key = presenceKey(community, pubkey)
      const ttl = toPresenceTtlSeconds(ttlSeconds)
      await callRedis(WHO, () => redis.set(key, status, 'EX', ttl))
    },
    async get(community, pubkeys) {
      const keys = pubkeys.map((p) => presenceKey(community, p))
      const found = new Map<string, string>()
      if (keys.length === 0) return found
      const values = await callRedis(WHO, () => redis.mget(keys))
      for (const [i, v] of values.entries()) if (v !== null) found.set(pubkeys[i] ?? '', v)
      return found
    },
    async clear(community, pubkey) {
      const key = presenceKey(community, pubkey)
      await callRedis(WHO, () => redis.del(key))
    },
  }
}
