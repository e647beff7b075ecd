// Backend selection (architecture §9), part of the composition root: embedded (SQLite, memory gates, in-process bus)
// unless Redis and PostgreSQL URLs are configured, then the cluster backends.
import { randomUUID } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { spawnBusBridge } from '../actors/bridges/bus-bridge.js'
import type { Kernel } from '../actors/kernel/index.js'
import { spawnStoreWriter } from '../actors/node/store-writer-actor.js'
import type { Bus } from '../infra/bus/bus.js'
import type { BusMac } from '../infra/bus/bus-mac.js'
import { createLocalBus } from '../infra/bus/local-bus.js'
import { type BusRejection, createRedisBus, type RedisBus } from '../infra/bus/redis-bus.js'
import { subscriberConnectionOptions } from '../infra/bus/redis-subscriber.js'
import type { Config } from '../infra/config.js'
import { type ConnectionSlots, createMemoryConnectionSlots } from '../infra/gates/connection-slots.js'
import { createMemoryPresenceStore } from '../infra/gates/memory-presence.js'
import { createMemoryRateLimiter } from '../infra/gates/memory-rate-limit.js'
import { createMemoryReplayGuard } from '../infra/gates/memory-replay-guard.js'
import type { PresenceStore } from '../infra/gates/presence.js'
import type { RateLimiter } from '../infra/gates/rate-limit.js'
import { createRedisConnectionSlots } from '../infra/gates/redis-connection-slots.js'
import { createRedisPresenceStore } from '../infra/gates/redis-presence.js'
import { createRedisRateLimiter } from '../infra/gates/redis-rate-limit.js'
import { createRedisReplayGuard } from '../infra/gates/redis-replay-guard.js'
import type { ReplayGuard } from '../infra/gates/replay-guard.js'
import type { Logger } from '../infra/log.js'
import { createRedisClient, isCluster, type RedisClient, redactRedisUrl, subscriberConnector } from '../infra/redis/connect.js'
import { logConnectionState } from '../infra/redis/connection-log.js'
import { BackendUnavailableError, redactUrl, retryAtStartup, rootMessage } from '../infra/startup.js'
import type { ChannelStore } from '../infra/store/channel-store.js'
import type { CommunityStore } from '../infra/store/community-store.js'
import type { EventStore } from '../infra/store/event-store.js'
import type { InviteStore } from '../infra/store/invite-store.js'
import { openPostgresChannelStore } from '../infra/store/postgres/postgres-channel-store.js'
import { openPostgresCommunityStore } from '../infra/store/postgres/postgres-community-store.js'
import { openPostgresEventStore, type PostgresEventStore } from '../infra/store/postgres/postgres-event-store.js'
import { openPostgresInviteStore } from '../infra/store/postgres/postgres-invite-store.js'
import { openSqliteChannelStore } from '../infra/store/sqlite/sqlite-channel-store.js'
import { openSqliteCommunityStore } from '../infra/store/sqlite/sqlite-community-store.js'
import { openSqliteEventStore } from '../infra/store/sqlite/sqlite-event-store.js'
import { openSqliteInviteStore } from '../infra/store/sqlite/sqlite-invite-store.js'

export interface Backends {
  mode: 'embedded' | 'cluster'
  /** unique per process: the bus drops its own echoes by it */
  nodeId: string
  events: EventStore
  communities: CommunityStore
  /** NIP-29 channels and their members: in the communities' SQLite file embedded, in PostgreSQL in a cluster */
  channels: ChannelStore
  /** NIP-43 invite codes, beside the communities (their use writes the allowed list) */
  invites: InviteStore
  limiter: RateLimiter
  /** NIP-98 auth event ids already used (NIP-86 management): per node embedded, shared in a cluster */
  replayGuard: ReplayGuard
  /** kind 20001 presence (architecture §8): per node embedded, shared in a cluster so any node's REQ sees it */
  presence: PresenceStore
  /** sockets open per client IP (limits.maxConnectionsPerIp): this node's embedded, the cluster's in a cluster */
  connectionSlots: ConnectionSlots
  bus: Bus
  /** the command client (cluster mode): the relay mesh's directory and registry use it too */
  redis?: RedisClient
  /** the PostgreSQL event store (cluster mode): fenced saves for the relay mesh */
  postgresEvents?: PostgresEventStore
  /**
   * spawns the node-level actors that own backend connections and threads: the Redis subscriber bridge
   * (cluster), the SQLite writer's thread (embedded, on the store this node opened)
   */
  startActors(kernel: Kernel): void
  /** the backends that do not answer right now (`postgres`, `redis`, `sqlite`): empty when all do */
  unhealthy(): Promise<string[]>
  close(): Promise<void>
}

/**
 * Gate and publish commands fail fast instead of queueing through an outage (gates fail closed); the
 * connection itself keeps retrying forever, so the node heals when Redis returns.
 */
const COMMAND_CLIENT_OPTIONS = {
  enableOfflineQueue: false,
  commandTimeout: 1_000,
  // a command in flight when the connection drops fails at once: resent after the reconnect it could admit a
  // write that arrived while Redis was down (seen once in test/faults/redis-restart.test.ts under load)
  maxRetriesPerRequest: 0,
  lazyConnect: true,
  retryStrategy: (attempt: number) => Math.min(100 * 2 ** attempt, 2_000),
}

export interface OpenBackendsOptions {
  eventStore?: EventStore
  /** wraps the CommunityStore the node opens (instrumentation, fault injection) */
  wrapCommunityStore?: (store: CommunityStore) => CommunityStore
  /** when start-up must have reached every backend (ms since the epoch); default: config.startupTimeoutSeconds from now */
  deadlineMs?: number
  /** the Redis bus's MAC, from the relay key every node shares (bus-mac.ts); cluster mode needs it */
  busMac?: BusMac
  /** a bus message dropped for its MAC or its shape (the metric) */
  onBusRejected?: (reason: BusRejection) => void
}

export async function openBackends(config: Config, log: Logger, opts: OpenBackendsOptions = {}): Promise<Backends> {
  const nodeId = randomUUID()
  const cluster = config.redisUrl !== '' || config.databaseUrl !== ''
  if (cluster && (config.redisUrl === '' || config.databaseUrl === '')) {
    throw new Error('cluster mode needs both APIARY_REDIS_URL and APIARY_DATABASE_URL')
  }
  const wrap = opts.wrapCommunityStore ?? ((store: CommunityStore) => store)
  if (!cluster) return embedded(config, log, nodeId, opts.eventStore, wrap)
  const retry = { deadlineMs: opts.deadlineMs ?? Date.now() + config.startupTimeoutSeconds * 1000, log }
  // a malformed URL throws ConfigError here, before anything is opened
  const redis = createRedisClient(config.redisUrl, COMMAND_CLIENT_OPTIONS)
  const connectSubscriber = subscriberConnector(config.redisUrl, subscriberConnectionOptions, redis)
  const opened: { close(): Promise<void> | void }[] = [{ close: () => redis.disconnect() }]
  try {
    await connectRedisAtStartup(redis, redactRedisUrl(config.redisUrl), retry)
    logConnectionState(redis, 'commands', log)
    const pg = redactUrl(config.databaseUrl)
    const storeOptions = {
      groupCommitMaxEvents: config.store.groupCommitMaxEvents,
      groupCommitMaxDelayMs: config.store.groupCommitMaxDelayMs,
      readPoolSize: config.store.postgresReadPoolSize,
      readBudgetMs: config.limits.readBudgetMs,
      maxRowsExamined: config.limits.maxRowsExamined,
    }
    const events =
      opts.eventStore ??
      (await retryAtStartup('PostgreSQL', pg, () => openPostgresEventStore({ url: config.databaseUrl, ...storeOptions, log }), retry))
    opened.push(events)
    const communities = wrap(await retryAtStartup('PostgreSQL', pg, () => openPostgresCommunityStore({ url: config.databaseUrl }), retry))
    opened.push(communities)
    const channels = await retryAtStartup('PostgreSQL', pg, () => openPostgresChannelStore({ url: config.databaseUrl }), retry)
    opened.push(channels)
    // after the communities: its schema sits beside theirs (a redemption writes the allowed list)
    const invites = await retryAtStartup('PostgreSQL', pg, () => openPostgresInviteStore({ url: config.databaseUrl }), retry)
    opened.push(invites)
    if (!opts.busMac) throw new Error('cluster mode needs the bus MAC (derived from the relay key)')
    const bus: RedisBus = createRedisBus({
      publisher: redis,
      nodeId,
      unsubscribeDebounceMs: 5_000,
      connectSubscriber,
      mac: opts.busMac,
      onRejected: opts.onBusRejected,
      log,
    })
    const connectionSlots = createRedisConnectionSlots({ redis, nodeId, log })
    return {
      mode: 'cluster',
      nodeId,
      events,
      redis,
      // a store brought by the embedding program has no fenced saves: the mesh refuses to start without them
      postgresEvents: 'saveFenced' in events ? (events as PostgresEventStore) : undefined,
      communities,
      channels,
      invites,
      limiter: createRedisRateLimiter({ redis, log }),
      replayGuard: createRedisReplayGuard({ redis }),
      presence: createRedisPresenceStore({ redis }),
      connectionSlots,
      bus,
      startActors: (kernel) => void spawnBusBridge(kernel, bus.link),
      unhealthy: async () => {
        const [pg, rd] = await Promise.all([events.ping().catch(() => false), redisServes(redis)])
        return [...(pg ? [] : ['postgres']), ...(rd ? [] : ['redis'])]
      },
      async close() {
        await bus.close()
        await events.close()
        await communities.close()
        await channels.close()
        await invites.close()
        await connectionSlots.close()
        redis.disconnect()
      },
    }
  } catch (error) {
    for (const o of opened.reverse()) await Promise.resolve(o.close()).catch(() => {})
    throw error
  }
}

/**
 * A readiness probe answers in time or counts as down: a stalled PostgreSQL would otherwise hold /health/ready
 * for the whole store deadline (10 s), and a load balancer's probe (often 1 s) would see a timeout, not a 503.
 */
const HEALTH_PROBE_MS = 1_000

function answers(ping: Promise<boolean>): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), HEALTH_PROBE_MS)
  })
  return Promise.race([ping.catch(() => false), late]).finally(() => clearTimeout(timer))
}

/**
 * Connects the command client within the start-up deadline. ioredis retries by itself (retryStrategy, or
 * clusterRetryStrategy for a cluster) once the first connect fails, so this waits for its 'ready' and logs
 * each failed attempt's cause; the error listener is there from the first attempt (no "Unhandled error
 * event"). A cluster client is ready once a seed gave it the slot map and CLUSTER INFO says cluster_state:ok;
 * it emits 'error' only when no seed answered, so a cluster that answers but is not ok logs nothing here and
 * ends in the timeout's BackendUnavailableError.
 */
function connectRedisAtStartup(redis: RedisClient, target: string, r: { deadlineMs: number; log: Logger }): Promise<void> {
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
      () =>
        finish(
          new BackendUnavailableError(
            'Redis',
            target,
            Date.now() - started,
            last ?? new Error(isCluster(redis) ? 'cluster not ready (no cluster_state:ok)' : 'no answer'),
          ),
        ),
      Math.max(0, r.deadlineMs - started),
    )
    redis.on('error', onError)
    redis.once('ready', onReady)
    // the failure also arrives as an 'error' event; the promise only starts the connection
    redis.connect().catch(() => {})
  })
}

/**
 * PONG from one Redis. A cluster in cluster_state:fail (with Redis's default cluster-require-full-coverage, any
 * master down without a replica to take over) still answers PING but refuses every key, so every write here
 * fails closed: unhealthy, as a single Redis that is down. One master down in a cluster that keeps serving the
 * other masters' slots is healthy: every node of ours shares that cluster, so no other node would do better.
 */
async function redisServes(redis: RedisClient): Promise<boolean> {
  try {
    if (isCluster(redis)) return String(await redis.cluster('INFO')).includes('cluster_state:ok')
    return (await redis.ping()) === 'PONG'
  } catch {
    return false
  }
}

function embedded(
  config: Config,
  log: Logger,
  nodeId: string,
  eventStore: EventStore | undefined,
  wrap: (store: CommunityStore) => CommunityStore,
): Backends {
  mkdirSync(config.dataDir, { recursive: true })
  const file = join(config.dataDir, 'apiary.sqlite')
  const own =
    eventStore === undefined
      ? openSqliteEventStore({
          file,
          groupCommitMaxEvents: config.store.groupCommitMaxEvents,
          groupCommitMaxDelayMs: config.store.groupCommitMaxDelayMs,
          readWorkers: config.store.readWorkers,
          inlineReadMaxRows: config.store.inlineReadMaxRows,
          writerThread: config.store.writerThread,
          durability: config.store.durability,
          writerNice: config.threads.writePathNice,
          readerNice: config.threads.readNice,
          queryTimeoutMs: config.store.queryTimeoutMs,
          readBudget: { maxRows: config.limits.maxRowsExamined, ms: config.limits.readBudgetMs },
          log,
        })
      : undefined
  const events = eventStore ?? own!
  const communities = wrap(openSqliteCommunityStore(file, config.store.durability))
  const channels = openSqliteChannelStore(file, config.store.durability)
  // after the communities: a redemption writes their allowed list
  const invites = openSqliteInviteStore(file, config.store.durability)
  const limiter = createMemoryRateLimiter()
  const bus = createLocalBus({ nodeId })
  return {
    mode: 'embedded',
    nodeId,
    events,
    communities,
    channels,
    invites,
    limiter,
    replayGuard: createMemoryReplayGuard(),
    presence: createMemoryPresenceStore(),
    connectionSlots: createMemoryConnectionSlots(),
    bus,
    startActors: (kernel) => {
      // a store the embedding program brought is its own to run
      const writer = own?.writerLifecycle()
      if (writer) spawnStoreWriter(kernel, writer)
    },
    unhealthy: async () => ((await answers(events.ping())) ? [] : ['sqlite']),
    async close() {
      await bus.close()
      await events.close()
      await communities.close()
      await channels.close()
      await invites.close()
      await limiter.close()
    },
  }
}
