// The gate contracts again, on a real three-master Redis Cluster through the client the relay makes from a
// redis+cluster:// URL: the same behaviour, with different communities' keys on different masters.
import { Cluster, type Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { PresenceStore } from '../../../src/infra/gates/presence'
import type { RateLimiter, RateRule } from '../../../src/infra/gates/rate-limit'
import { createRedisPresenceStore } from '../../../src/infra/gates/redis-presence'
import { type AdmitRequest, createRedisRateLimiter } from '../../../src/infra/gates/redis-rate-limit'
import { createRedisReplayGuard } from '../../../src/infra/gates/redis-replay-guard'
import type { ReplayGuard } from '../../../src/infra/gates/replay-guard'
import { createRedisClient, isCluster } from '../../../src/infra/redis/connect'
import { presenceKey, rateLimitKey } from '../../../src/infra/redis/keys'
import { type PrivateRedisCluster, startRedisCluster } from '../../support/redis-cluster'
import { hex64, testCommunity } from '../redis/connect'
import { describePresenceContract } from './presence.contract'
import { describeRateLimiterContract } from './rate-limit.contract'
import { describeReplayGuardContract } from './replay-guard.contract'

// the relay's command-client options (relay/backends.ts), shortened retries for a test
const FAIL_FAST = { enableOfflineQueue: false, commandTimeout: 1000, maxRetriesPerRequest: 1, lazyConnect: true, retryStrategy: () => 50 }
const slow = (burst: number): RateRule => ({ ratePerSecond: 0.001, burst })

let server: PrivateRedisCluster
let redis: Cluster
// the keys and communities the contracts used, to see afterwards where they landed
const keysUsed = new Set<string>()

beforeAll(async () => {
  server = await startRedisCluster()
  const client = createRedisClient(server.url, FAIL_FAST)
  if (!isCluster(client)) throw new Error('redis+cluster:// must make a Cluster client')
  redis = client
  redis.on('error', () => {})
  await redis.connect()
}, 30_000)
afterAll(async () => {
  redis?.disconnect()
  await server?.stop()
})

function recordedLimiter(limiter: RateLimiter): RateLimiter {
  return {
    keyOf: (budget) => limiter.keyOf(budget),
    admit: (key, rule, cost) => {
      keysUsed.add(key)
      return limiter.admit(key, rule, cost)
    },
    close: () => limiter.close(),
  }
}

function recordedGuard(guard: ReplayGuard): ReplayGuard {
  return {
    claim: (community, id, ttl) => {
      keysUsed.add(`apiary:{${community}}:nip98:x`)
      return guard.claim(community, id, ttl)
    },
  }
}

function recordedPresence(store: PresenceStore): PresenceStore {
  const noted = <T>(c: string, run: () => T): T => {
    keysUsed.add(`apiary:{${c}}:presence:x`)
    return run()
  }
  return {
    set: (c, p, s, t) => noted(c, () => store.set(c, p, s, t)),
    get: (c, ps) => noted(c, () => store.get(c, ps)),
    clear: (c, p) => noted(c, () => store.clear(c, p)),
    connect: (c, p, t) => noted(c, () => store.connect(c, p, t)),
    disconnect: (c, p) => noted(c, () => store.disconnect(c, p)),
  }
}

describeRateLimiterContract('redis cluster', () => recordedLimiter(createRedisRateLimiter({ redis })), { realClock: true })
describeReplayGuardContract('redis cluster', () => recordedGuard(createRedisReplayGuard({ redis })))
describePresenceContract('redis cluster', () => recordedPresence(createRedisPresenceStore({ redis })))

/** The port of the master owning `key`'s slot, by the cluster's own answer (CLUSTER KEYSLOT + SLOTS). */
const masterOf = (key: string) => server.masterOf(key)

/** Communities whose keys live on `n` different masters, one each. */
async function communitiesOnDistinctMasters(n: number): Promise<{ community: string; port: number }[]> {
  const byMaster = new Map<number, string>()
  for (let i = 0; i < 200 && byMaster.size < n; i++) {
    const community = testCommunity('cl')
    const port = await masterOf(presenceKey(community, hex64()))
    if (!byMaster.has(port)) byMaster.set(port, community)
  }
  return [...byMaster].map(([port, community]) => ({ community, port }))
}

const nodeOn = (port: number): Redis => {
  const node = redis.nodes('master').find((n) => n.options.port === port)
  if (!node) throw new Error(`no master on ${port}`)
  return node
}

describe('gates on a Redis Cluster', () => {
  it('ran the contracts with keys spread over at least two masters', async () => {
    const masters = new Set(await Promise.all([...keysUsed].map(masterOf)))
    expect(keysUsed.size).toBeGreaterThan(10)
    expect(masters.size).toBeGreaterThanOrEqual(2)
    expect(redis.nodes('master')).toHaveLength(3)
  })

  it("keeps each community's keys on the master that owns its slot, and different communities on different masters", async () => {
    const spread = await communitiesOnDistinctMasters(3)
    expect(spread).toHaveLength(3)
    const presence = createRedisPresenceStore({ redis })
    const limiter = createRedisRateLimiter({ redis })
    const alice = hex64()
    for (const { community } of spread) {
      await presence.connect(community, alice, 30)
      await presence.set(community, alice, `online in ${community}`, 30)
      await limiter.admit(rateLimitKey(community, alice, 'events'), slow(3))
    }
    for (const { community, port } of spread) {
      const keys = [presenceKey(community, alice), rateLimitKey(community, alice, 'events')]
      // the keys are on their master, and every other master sends a client there: one community is one slot
      for (const node of redis.nodes('master')) {
        if (node.options.port === port) expect(await node.exists(...keys)).toBe(2)
        else await expect(node.exists(...keys)).rejects.toThrow(new RegExp(`^MOVED \\d+ 127\\.0\\.0\\.1:${port}$`))
      }
      expect(await nodeOn(port).get(presenceKey(community, alice))).toBe(`online in ${community}`)
      expect(await presence.disconnect(community, alice)).toBe(0)
    }
  })

  it('decides an admitMany batch spanning communities on different masters as the same admits one after the other', async () => {
    const [a, b] = await communitiesOnDistinctMasters(2)
    const limiter = createRedisRateLimiter({ redis })
    const pubkey = hex64()
    const [ka, kb] = [rateLimitKey(a!.community, pubkey, 'events'), rateLimitKey(b!.community, pubkey, 'reqs')]
    const batch: AdmitRequest[] = [
      { key: ka, rule: slow(2) },
      { key: kb, rule: slow(1) },
      { key: ka, rule: slow(2) },
      { key: kb, rule: slow(1) },
      { key: ka, rule: slow(2) },
      { key: rateLimitKey(a!.community, pubkey, 'api'), rule: slow(1), cost: 2 },
    ]
    // what admitMany must avoid: one pipeline over two masters' keys is refused by ioredis as a whole
    await expect(redis.pipeline().get(ka).get(kb).exec()).rejects.toThrow(/same slots allocation group/)
    const answers = await limiter.admitMany(batch)
    expect(answers.map((x) => x.allowed)).toEqual([true, true, true, false, false, false])
    expect(answers[5]).toEqual({ allowed: false, retryAfterMs: Infinity })
  })

  it('refuses a Cluster client that would queue gate commands through an outage (RangeError)', () => {
    const queueing = new Cluster([{ host: '127.0.0.1', port: server.ports[0]! }], {
      lazyConnect: true,
      redisOptions: { commandTimeout: 500 },
    })
    const untimed = new Cluster([{ host: '127.0.0.1', port: server.ports[0]! }], { lazyConnect: true, enableOfflineQueue: false })
    for (const client of [queueing, untimed]) {
      expect(() => createRedisRateLimiter({ redis: client })).toThrow(RangeError)
      expect(() => createRedisReplayGuard({ redis: client })).toThrow(RangeError)
      expect(() => createRedisPresenceStore({ redis: client })).toThrow(RangeError)
      client.disconnect()
    }
    expect(() => createRedisRateLimiter({ redis })).not.toThrow()
  })
})
