// Console sessions for a cluster: one Redis key per sign-in and per challenge, each set with its expiry in the
// same command, so nothing outlives its TTL. A challenge is taken by DEL: exactly one caller sees it removed.
import { callRedis, checkFailsFast } from '../gates/redis-gate-client.js'
import type { RedisClient } from '../redis/connect.js'
import { consoleChallengeKey, consoleSessionKey } from '../redis/keys.js'
import { type ConsoleSessions, type StoredSession, tokenHashHex } from './console-sessions.js'

const WHO = 'redis console sessions'

/** `redis` must fail fast (redis-gate-client.ts); a Redis failure rejects with GateError. */
export function createRedisConsoleSessions(redis: RedisClient, nowMs: () => number = Date.now): ConsoleSessions {
  checkFailsFast(redis, WHO)
  return {
    async put(token, session, ttlSeconds) {
      await callRedis(WHO, () => redis.set(consoleSessionKey(tokenHashHex(token)), JSON.stringify(session), 'EX', ttlSeconds))
    },
    async get(token) {
      const raw = await callRedis(WHO, () => redis.get(consoleSessionKey(tokenHashHex(token))))
      if (raw === null) return undefined
      const session = parseStored(raw)
      // Redis expires in whole seconds; the session's own end is exact
      return session !== undefined && session.expiresAtMs > nowMs() ? session : undefined
    },
    async end(token) {
      await callRedis(WHO, () => redis.del(consoleSessionKey(tokenHashHex(token))))
    },
    async offerChallenge(challengeHex, ttlSeconds) {
      await callRedis(WHO, () => redis.set(consoleChallengeKey(challengeHex), '1', 'EX', ttlSeconds))
    },
    async takeChallenge(challengeHex) {
      return (await callRedis(WHO, () => redis.del(consoleChallengeKey(challengeHex)))) === 1
    },
  }
}

function parseStored(raw: string): StoredSession | undefined {
  try {
    const v = JSON.parse(raw) as Partial<StoredSession>
    if (typeof v.pubkey === 'string' && typeof v.csrf === 'string' && typeof v.expiresAtMs === 'number')
      return { pubkey: v.pubkey, csrf: v.csrf, expiresAtMs: v.expiresAtMs }
  } catch {
    // written by another build: treated as no session
  }
  return undefined
}
