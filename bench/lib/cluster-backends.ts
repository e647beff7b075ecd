// The cluster's backends for the scenarios that use them: whether Redis and PostgreSQL answer, a database and a
// community of a run's own, Apiary nodes on them, and the servers' CPU over a measured window.
//
// Isolation on shared servers: every run gets its own database (`apiary_bench_<random>`, dropped afterwards,
// WITH (FORCE)) and its own community id (`bench-<random>`, bound to the host `bench.test`), so its Redis keys
// (`apiary:{bench-…}:…`) and channels are its own; they are deleted afterwards (SCAN + UNLINK on that prefix,
// never FLUSHALL). The only shared key the nodes touch is the per-IP connection limiter, which expires.
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import postgres from 'postgres'
import type { ConfigInput } from '../built-package'
import { knobs } from '../knobs'
import { postgresCpuSeconds, postgresCpuSince } from './proc-readings'
import { type RelayProcess, spawnRelay } from './relay-process'

export const BENCH_HOST = 'bench.test'

const round2 = (x: number) => Math.round(x * 100) / 100
const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e))
export const randomCommunityId = () => `bench-${randomBytes(5).toString('hex')}`

// ---------------------------------------------------------------- backends

/** undefined when Redis answers within a few seconds, else why not */
export async function redisUnavailable(): Promise<string | undefined> {
  const redis = new Redis(knobs.redisUrl, {
    lazyConnect: true,
    enableOfflineQueue: false,
    connectTimeout: 2_000,
    commandTimeout: 2_000,
    retryStrategy: () => null,
  })
  let socketError: unknown
  redis.on('error', (error) => {
    socketError = error
  })
  try {
    await redis.connect()
    const pong = await redis.ping()
    return pong === 'PONG' ? undefined : `Redis at ${knobs.redisUrl} answered ${pong}`
  } catch (error) {
    return `Redis at ${knobs.redisUrl}: ${errorText(socketError ?? error)}`
  } finally {
    redis.disconnect()
  }
}

/** undefined when PostgreSQL answers within a few seconds, else why not */
export async function postgresUnavailable(): Promise<string | undefined> {
  const sql = postgres(knobs.postgresAdminUrl, { max: 1, connect_timeout: 3, onnotice: () => {} })
  try {
    await sql`select 1`
    return undefined
  } catch (error) {
    return `PostgreSQL at ${knobs.postgresAdminUrl}: ${errorText(error)}`
  } finally {
    await sql.end({ timeout: 2 })
  }
}

const liveDatabases = new Set<string>()

async function adminSql<T>(fn: (sql: postgres.Sql) => Promise<T>): Promise<T> {
  const sql = postgres(knobs.postgresAdminUrl, { max: 1, connect_timeout: 5, onnotice: () => {} })
  try {
    return await fn(sql)
  } finally {
    await sql.end({ timeout: 5 })
  }
}

/** A database of this run's own; `drop()` drops only it. */
export async function createBenchDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `apiary_bench_${randomBytes(6).toString('hex')}`
  await adminSql((sql) => sql.unsafe(`CREATE DATABASE ${name}`))
  liveDatabases.add(name)
  const url = new URL(knobs.postgresAdminUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    async drop() {
      // WITH (FORCE): a node that died without closing its pool must not keep the database alive
      await adminSql((sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
      liveDatabases.delete(name)
    },
  }
}

/** Drop every bench database this process created and did not drop yet (bench/run.ts calls it at the end). */
export async function dropBenchDatabases(): Promise<void> {
  for (const name of [...liveDatabases]) {
    await adminSql((sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).catch(() => {})
    liveDatabases.delete(name)
  }
}

/** UNLINK every key of one community (`apiary:{id}:*`); bounded SCAN. */
export async function deleteCommunityKeys(redis: Redis, community: string): Promise<number> {
  let cursor = '0'
  let deleted = 0
  for (let i = 0; i < 100_000; i++) {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `apiary:{${community}}:*`, 'COUNT', 1_000)
    if (keys.length) deleted += await redis.unlink(...keys)
    cursor = next
    if (cursor === '0') break
  }
  return deleted
}

/** redis-server CPU (user + sys) so far, seconds, from INFO cpu: every client's load, not only ours. */
export async function redisCpuSeconds(redis: Redis): Promise<number> {
  const info = await redis.info('cpu')
  const field = (name: string) => Number(new RegExp(`^${name}:([0-9.]+)`, 'm').exec(info)?.[1] ?? Number.NaN)
  return field('used_cpu_user') + field('used_cpu_sys')
}

/** One run's cluster: a fresh database, a fresh community bound to BENCH_HOST, one relay key for every node. */
export interface ClusterEnv {
  config: ConfigInput
  /** admin client (INFO, cleanup); not a gate client */
  redis: Redis
  close(): Promise<void>
}

export async function openClusterEnv(): Promise<ClusterEnv> {
  const db = await createBenchDatabase()
  const community = randomCommunityId()
  const redis = new Redis(knobs.redisUrl, { lazyConnect: true, connectTimeout: 3_000, maxRetriesPerRequest: 1 })
  redis.on('error', () => {})
  try {
    await redis.connect()
  } catch (error) {
    redis.disconnect()
    await db.drop()
    throw error
  }
  return {
    config: {
      redisUrl: knobs.redisUrl,
      databaseUrl: db.url,
      relaySecretKey: randomBytes(32).toString('hex'),
      communities: [{ id: community, hosts: [BENCH_HOST] }],
    },
    redis,
    async close() {
      await deleteCommunityKeys(redis, community).catch(() => 0)
      redis.disconnect()
      await db.drop()
    },
  }
}

/** Embedded (SQLite) node serving the same kind of community, so both sides answer the same Host. */
export const embeddedConfig = (): ConfigInput => ({ communities: [{ id: randomCommunityId(), hosts: [BENCH_HOST] }] })

/** Nodes are started one after the other: two nodes migrating one fresh database at once would race. */
export async function withNodes<T>(
  count: number,
  config: ConfigInput,
  dir: (label: string) => string,
  fn: (nodes: RelayProcess[]) => Promise<T>,
): Promise<T> {
  const nodes: RelayProcess[] = []
  try {
    for (let i = 0; i < count; i++)
      nodes.push(await spawnRelay('apiary', dir(`node${String.fromCharCode(97 + i)}`), config as Record<string, unknown>))
    return await fn(nodes)
  } finally {
    await Promise.allSettled(nodes.map((n) => n.close()))
  }
}

/**
 * CPU of all `nodes` over a load generator's timed window, in cores; with `redis`, also of redis-server and of
 * the local PostgreSQL server processes (both shared: every client's load counts). The nodes' event-loop delay
 * over the same window (the worst node's p99), and the relay child's profiling over it when a knob asks.
 */
export function cpuProbe(nodes: RelayProcess[], redis?: Redis) {
  let t0 = 0
  let relay0 = 0
  let redis0 = 0
  let pg0 = new Map<number, number>()
  const figures = { relayCores: Number.NaN, redisCores: Number.NaN, postgresCores: Number.NaN, loopDelayP99Ms: Number.NaN }
  const relayCpu = async () => (await Promise.all(nodes.map((n) => n.cpuMicros()))).reduce((a, b) => a + b, 0)
  return {
    figures,
    onStart: async () => {
      await Promise.all(nodes.map((n) => n.spanStart()))
      relay0 = await relayCpu()
      if (redis) {
        redis0 = await redisCpuSeconds(redis)
        pg0 = postgresCpuSeconds()
      }
      t0 = performance.now()
    },
    onEnd: async () => {
      const ms = performance.now() - t0
      figures.relayCores = round2(((await relayCpu()) - relay0) / 1000 / ms)
      const delays = await Promise.all(nodes.map((n) => n.spanStop()))
      figures.loopDelayP99Ms = Math.max(...delays.map((d) => d.p99Ms))
      if (redis) {
        figures.postgresCores = pg0.size ? round2((postgresCpuSince(pg0) * 1000) / ms) : Number.NaN
        figures.redisCores = round2((((await redisCpuSeconds(redis)) - redis0) * 1000) / ms)
      }
    },
  }
}
