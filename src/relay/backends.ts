// Backend selection (DESIGN §7), part of the composition root: embedded (SQLite, memory gates, in-process bus)
// unless Redis and PostgreSQL URLs are configured, then the cluster backends.
import { randomUUID } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { spawnBusBridge } from '../actors/bridges/bus-bridge.js'
import type { Kernel } from '../actors/kernel/index.js'
import type { Bus } from '../infra/bus/bus.js'
import { createLocalBus } from '../infra/bus/local-bus.js'
import { createRedisBus, type RedisBus } from '../infra/bus/redis-bus.js'
import { subscriberConnectionOptions } from '../infra/bus/redis-subscriber.js'
import type { Config } from '../infra/config.js'
import { createMemoryPresenceStore } from '../infra/gates/memory-presence.js'
import { createMemoryRateLimiter } from '../infra/gates/memory-rate-limit.js'
import { createMemoryReplayGuard } from '../infra/gates/memory-replay-guard.js'
import type { PresenceStore } from '../infra/gates/presence.js'
import type { RateLimiter } from '../infra/gates/rate-limit.js'
import { createRedisPresenceStore } from '../infra/gates/redis-presence.js'
import { createRedisRateLimiter } from '../infra/gates/redis-rate-limit.js'
import { createRedisReplayGuard } from '../infra/gates/redis-replay-guard.js'
import type { ReplayGuard } from '../infra/gates/replay-guard.js'
import type { Logger } from '../infra/log.js'
import { logConnectionState } from '../infra/redis/connection-log.js'
import { BackendUnavailableError, redactUrl, retryAtStartup, rootMessage } from '../infra/startup.js'
import type { ChannelStore } from '../infra/store/channel-store.js'
import type { CommunityStore } from '../infra/store/community-store.js'
import type { EventStore } from '../infra/store/event-store.js'
import { openPostgresChannelStore } from '../infra/store/postgres-channel-store.js'
import { openPostgresCommunityStore } from '../infra/store/postgres-community-store.js'
import { openPostgresEventStore } from '../infra/store/postgres-event-store.js'
import { openSqliteChannelStore } from '../infra/store/sqlite-channel-store.js'
import { openSqliteCommunityStore } from '../infra/store/sqlite-community-store.js'
import { openSqliteEventStore } from '../infra/store/sqlite-event-store.js'

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

export interface OpenBackendsOptions {
  eventStore?: EventStore
  /** when start-up must have reached every backend (ms since the epoch); default: config.startupTimeoutSeconds from now */
  deadlineMs?: number
}

export async function openBackends(config: Config, log: Logger, opts: OpenBackendsOptions = {}): Promise<Backends> {
  const nodeId = randomUUID()
  const cluster = config.redisUrl !== '' || config.databaseUrl !== ''
  if (cluster && (config.redisUrl === '' || config.databaseUrl === '')) {
    throw new Error('cluster mode needs both APIARY_REDIS_URL and APIARY_DATABASE_URL')
  }
  if (!cluster) return embedded(config, log, nodeId, opts.eventStore)
  const retry = { deadlineMs: opts.deadlineMs ?? Date.now() + config.startupTimeoutSeconds * 1000, log }
  const redis = new Redis(config.redisUrl, COMMAND_CLIENT_OPTIONS)
  const opened: { close(): Promise<void> | void }[] = [{ close: () => redis.disconnect() }]
  try {
    await connectRedisAtStartup(redis, redactUrl(config.redisUrl), retry)
    logConnectionState(redis, 'commands', log)
    const pg = redactUrl(config.databaseUrl)
    const groupCommit = { groupCommitMaxEvents: config.store.groupCommitMaxEvents, groupCommitMaxDelayMs: config.store.groupCommitMaxDelayMs }
    const events =
      opts.eventStore ?? (await retryAtStartup('PostgreSQL', pg, () => openPostgresEventStore({ url: config.databaseUrl, ...groupCommit, log }), retry))
    opened.push(events)
    const communities = await retryAtStartup('PostgreSQL', pg, () => openPostgresCommunityStore({ url: config.databaseUrl }), retry)
    opened.push(communities)
    const channels = await retryAtStartup('PostgreSQL', pg, () => openPostgresChannelStore({ url: config.databaseUrl }), retry)
    opened.push(channels)
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
  } catch (error) {
    for (const o of opened.reverse()) await Promise.resolve(o.close()).catch(() => {})
    throw error
  }
}

/**
 * Connects the command client within the start-up deadline. ioredis retries by itself (retryStrategy) once
 * the first connect fails, so this waits for its 'ready' and logs each failed attempt's cause; the error
 * listener is there from the first attempt (no "Unhandled error event").
 */
function connectRedisAtStartup(redis: Redis, target: string, r: { deadlineMs: number; log: Logger }): Promise<void> {
  const started = Date.now()
  return new Promise((resolve, reject) => {
    let last: unknown
    let attempt = 0
    const onError = (error: unknown) => {
      last = error
      r.log.warn({ backend: 'Redis', target, attempt: ++attempt, cause: rootMessage(error) }, 'Redis unreachable at start; retrying')
    }
    const finish = (error?: Error) => {
      clearTimeout(timer)
      redis.off('error', onError)
      redis.off('ready', onReady)
      if (error) reject(error)
      else resolve()
    }
    const onReady = () => finish()
    const timer = setTimeout(
      () => finish(new BackendUnavailableError('Redis', target, Date.now() - started, last ?? new Error('no answer'))),
      Math.max(0, r.deadlineMs - started),
    )
    redis.on('error', onError)
    redis.once('ready', onReady)
    // the failure also arrives as an 'error' event; the promise only starts the connection
    redis.connect().catch(() => {})
  })
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
