// Presence for a cluster: one key per (community, pubkey) with the status as value and EX as its lifetime,
// so Redis drops silent pubkeys by itself. A community's keys share a hash slot ({community} tag), which
// is what lets one MGET read many pubkeys in cluster mode.
import type { RedisClient } from '../redis/connect.js'
import { presenceConnKey, presenceKey } from '../redis/keys.js'
import { type PresenceStore, toPresenceTtlSeconds } from './presence.js'
import { callRedis, checkFailsFast } from './redis-gate-client.js'

const WHO = 'redis presence store'

// KEYS[1] = connection count, KEYS[2] = presence (one slot). A count that went missing (expired with a node
// that stopped heartbeating) or negative means nobody is counted any more: clear rather than pin.
const DISCONNECT = `
local n = redis.call('DECR', KEYS[1])
if n <= 0 then
  redis.call('DEL', KEYS[1], KEYS[2])
  return 0
end
return n`

/** `redis` must fail fast (redis-gate-client.ts); every Redis failure rejects with GateError. */
export function createRedisPresenceStore(opts: { redis: RedisClient }): PresenceStore {
  const { redis } = opts
  checkFailsFast(redis, WHO)
  return {
    async set(community, pubkey, status, ttlSeconds) {
      const key = presenceKey(community, pubkey)
      const ttl = toPresenceTtlSeconds(ttlSeconds)
      // the heartbeat also keeps the connection count alive (same slot, so one MULTI works in cluster mode)
      await callRedis(WHO, () =>
        redis.multi().set(key, status, 'EX', ttl).expire(presenceConnKey(community, pubkey), ttl).exec().then(checkExec),
      )
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
    async connect(community, pubkey, ttlSeconds) {
      const key = presenceConnKey(community, pubkey)
      const ttl = toPresenceTtlSeconds(ttlSeconds)
      await callRedis(WHO, () => redis.multi().incr(key).expire(key, ttl).exec().then(checkExec))
    },
    async disconnect(community, pubkey) {
      const keys = [presenceConnKey(community, pubkey), presenceKey(community, pubkey)]
      return Number(await callRedis(WHO, () => redis.eval(DISCONNECT, 2, ...keys)))
    },
  }
}

/** MULTI reports each command's error in its reply instead of rejecting: surface the first one. */
function checkExec(replies: [Error | null, unknown][] | null): void {
  const failed = replies?.find(([e]) => e !== null)?.[0]
  if (failed) throw failed
}
