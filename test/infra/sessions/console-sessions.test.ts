import type { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { consoleSessionKey } from '../../../src/infra/redis/keys'
import {
  type ConsoleSessions,
  createMemoryConsoleSessions,
  newChallengeHex,
  newSessionToken,
  tokenHashHex,
} from '../../../src/infra/sessions/console-sessions'
import { createRedisConsoleSessions } from '../../../src/infra/sessions/redis-console-sessions'
import { connectRedis } from '../redis/connect'

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

const session = (ttlMs: number) => ({ pubkey: 'a'.repeat(64), csrf: newSessionToken(), expiresAtMs: Date.now() + ttlMs })

function describeSessions(name: string, make: () => ConsoleSessions) {
  describe(`console sessions (${name})`, () => {
    it('finds a session by its cookie until it is ended', async () => {
      const s = make()
      const token = newSessionToken()
      const stored = session(60_000)
      await s.put(token, stored, 60)
      expect(await s.get(token)).toEqual(stored)
      expect(await s.get(newSessionToken())).toBeUndefined()
      await s.end(token)
      expect(await s.get(token)).toBeUndefined()
    })

    it('gives nothing for a session past its end', async () => {
      const s = make()
      const token = newSessionToken()
      await s.put(token, session(-1), 60)
      expect(await s.get(token)).toBeUndefined()
    })

    it('takes a challenge once, and never one it did not offer', async () => {
      const s = make()
      const challenge = newChallengeHex()
      await s.offerChallenge(challenge, 120)
      expect(await s.takeChallenge(challenge)).toBe(true)
      expect(await s.takeChallenge(challenge)).toBe(false)
      expect(await s.takeChallenge(newChallengeHex())).toBe(false)
    })
  })
}

describeSessions('memory', () => createMemoryConsoleSessions())
describeSessions('redis', () => createRedisConsoleSessions(redis))

describe('console sessions in a cluster', () => {
  it('accept on one node a sign-in made on another, keyed by the cookie hash with its expiry', async () => {
    const a = createRedisConsoleSessions(redis)
    const b = createRedisConsoleSessions(nodeB)
    const token = newSessionToken()
    const stored = session(60_000)
    await a.put(token, stored, 60)
    expect(await b.get(token)).toEqual(stored)
    const key = consoleSessionKey(tokenHashHex(token))
    expect(await redis.ttl(key)).toBeGreaterThan(55)
    expect(await redis.get(key)).not.toContain(token)
    const challenge = newChallengeHex()
    await a.offerChallenge(challenge, 120)
    expect(await b.takeChallenge(challenge)).toBe(true)
    expect(await a.takeChallenge(challenge)).toBe(false)
    await b.end(token)
    expect(await a.get(token)).toBeUndefined()
  })
})

describe('console sessions in memory', () => {
  it('end at the session’s own expiry, to the millisecond', async () => {
    let clock = 1_000_000
    const s = createMemoryConsoleSessions(() => clock)
    const token = newSessionToken()
    await s.put(token, { pubkey: 'a'.repeat(64), csrf: 'c', expiresAtMs: 1_060_000 }, 60)
    clock = 1_059_999
    expect(await s.get(token)).toBeDefined()
    clock = 1_060_000
    expect(await s.get(token)).toBeUndefined()
  })
})
