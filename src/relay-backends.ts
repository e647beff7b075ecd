// Backend selection (DESIGN §7), part of the composition root: embedded (SQLite, memory gates, in-process bus)
// unless Redis and PostgreSQL URLs are configured, then the cluster backends.
import { randomUUID } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { spawnBusBridge } from './actors/bridges/bus-bridge'
import type { Kernel } from './actors/kernel'
import type { Bus } from './infra/bus/bus'
import { createLocalBus } from './infra/bus/local-bus'
import { createRedisBus, type RedisBus } from './infra/bus/redis-bus'
import { subscriberConnectionOptions } from './infra/bus/redis-subscriber'
import type { Config } from './infra/config'
import { createMemoryPresenceStore } from './infra/gates/memory-presence'
import { createMemoryRateLimiter } from './infra/gates/memory-rate-limit'
import { createMemoryReplayGuard } from './infra/gates/memory-replay-guard'
import type { PresenceStore } from './infra/gates/presence'
import type { RateLimiter } from './infra/gates/rate-limit'
import { createRedisPresenceStore } from './infra/gates/redis-presence'
import { createRedisRateLimiter } from './infra/gates/redis-rate-limit'
import { createRedisReplayGuard } from './infra/gates/redis-replay-guard'
import type { ReplayGuard } from './infra/gates/replay-guard'
import type { Logger } from './infra/log'
import type { ChannelStore } from './infra/store/channel-store'
import type { CommunityStore } from './infra/store/community-store'
import type { EventStore } from './infra/store/event-store'
import { openPostgresChannelStore } from './infra/store/postgres-channel-store'
import { openPostgresCommunityStore } from './infra/store/postgres-community-store'
import { openPostgresEventStore } from './infra/store/postgres-event-store'
import { openSqliteChannelStore } from './infra/store/sqlite-channel-store'
import { openSqliteCommunityStore } from './infra/store/sqlite-community-store'
import { openSqliteEventStore } from './infra/store/sqlite-event-store'

export interface Backends {
  mode: 'embedded' | 'cluster'
  /** unique per process: the bus drops its own echoes by it */
  nodeId: string
  events: EventStore
  communities: CommunityStore
  /** NIP-29 channels and their members: in the communities' SQLite file embedded, in PostgreSQL in a cluster */
  channels: ChannelStore
  limiter: RateLimiter
  /** NIP-98 auth event ids already used (NIP-86 management): per node embedded, shared in a cluster */
  replayGuard: ReplayGuard
  /** kind 20001 presence (DESIGN §6): per node embedded, shared in a cluster so any node's REQ sees it */
  presence: PresenceStore
  bus: Bus
  /** spawns the actors that own backend connections (the Redis subscriber bridge) */
  startBridges(kernel: Kernel): void
  /** ready only when every backend answers */
  ready(): Promise<boolean>
  close(): Promise<void>
}

/**
 * Gate and publish commands fail fast instead of queueing through an outage (gates fail closed); the
 * connection itself keeps retrying forever, so the node heals when Redis returns.
 */
const COMMAND_CLIENT_OPTIONS = {
  enableOfflineQueue: false,
  commandTimeout: 1_000,
  maxRetriesPerRequest: 1,
  lazyConnect: true,
  retryStrategy: (attempt: number) => Math.min(100 * 2 ** attempt, 2_000),
}

export async function openBackends(config: Config, log: Logger, opts: { eventStore?: EventStore } = {}): Promise<Backends> {
  const nodeId = randomUUID()
  const cluster = config.redisUrl !== '' || config.databaseUrl !== ''
  if (cluster && (config.redisUrl === '' || config.databaseUrl === '')) {
    throw new Error('cluster mode needs both APIARY_REDIS_URL and APIARY_DATABASE_URL')
  }
  if (!cluster) return embedded(config, log, nodeId, opts.eventStore)
  const redis = new Redis(config.redisUrl, COMMAND_CLIENT_OPTIONS)
  // a node may start while Redis is down: it serves reads, its gates fail closed, and it heals by itself
  await redis.connect().catch((error: unknown) => log.error({ err: error }, 'redis unreachable at start; retrying'))
  redis.on('error', (error) => log.debug({ err: error }, 'redis connection error'))
  const groupCommit = { groupCommitMaxEvents: config.store.groupCommitMaxEvents, groupCommitMaxDelayMs: config.store.groupCommitMaxDelayMs }
  const events = opts.eventStore ?? (await openPostgresEventStore({ url: config.databaseUrl, ...groupCommit, log }))
  const communities = await openPostgresCommunityStore({ url: config.databaseUrl })
  const channels = await openPostgresChannelStore({ url: config.databaseUrl })
  const bus: RedisBus = createRedisBus({
    publisher: redis,
    nodeId,
    unsubscribeDebounceMs: 5_000,
    connectSubscriber: () => new Redis(config.redisUrl, subscriberConnectionOptions),
    log,
  })
  return {
    mode: 'cluster',
    nodeId,
    events,
    communities,
    channels,
    limiter: createRedisRateLimiter({ redis, log }),
    replayGuard: createRedisReplayGuard({ redis }),
    presence: createRedisPresenceStore({ redis }),
    bus,
    startBridges: (kernel) => void spawnBusBridge(kernel, bus.link),
    ready: async () => (await events.ping()) && (await redis.ping().then((r) => r === 'PONG', () => false)),
    async close() {
      await bus.close()
      await events.close()
      await communities.close()
      await channels.close()
      redis.disconnect()
    },
  }
}

function embedded(config: Config, log: Logger, nodeId: string, eventStore?: EventStore): Backends {
  mkdirSync(config.dataDir, { recursive: true })
  const file = join(config.dataDir, 'apiary.sqlite')
  const events =
    eventStore ??
    openSqliteEventStore({
      file,
      groupCommitMaxEvents: config.store.groupCommitMaxEvents,
      groupCommitMaxDelayMs: config.store.groupCommitMaxDelayMs,
      log,
    })
  const communities = openSqliteCommunityStore(file)
  const channels = openSqliteChannelStore(file)
  const limiter = createMemoryRateLimiter()
  const bus = createLocalBus({ nodeId })
  return {
    mode: 'embedded',
    nodeId,
    events,
    communities,
    channels,
    limiter,
    replayGuard: createMemoryReplayGuard(),
    presence: createMemoryPresenceStore(),
    bus,
    startBridges: () => {},
    ready: () => events.ping(),
    async close() {
      await bus.close()
      await events.close()
      await communities.close()
      await channels.close()
      await limiter.close()
    },
  }
}
