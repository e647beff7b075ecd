// Cluster scenarios (DESIGN §7): Apiary nodes on a shared Redis and PostgreSQL. bench/run.ts runs them
// (`--only cluster-fanout,admission,ingest-pg`, or by default when both backends answer) and builds the table.
//
// Isolation on shared servers: every run gets its own database (`apiary_bench_<random>`, dropped afterwards,
// WITH (FORCE)) and its own community id (`bench-<random>`, bound to the host `bench.test`), so its Redis keys
// (`apiary:{bench-…}:…`) and channels are its own; they are deleted afterwards (SCAN + UNLINK on that prefix,
// never FLUSHALL). The only shared key the nodes touch is the per-IP connection limiter (`apiary:ip:…:conn`),
// which expires by itself.
import { randomBytes } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { Redis } from 'ioredis'
import postgres from 'postgres'
import type WebSocket from 'ws'
import type { ConfigInput } from '../src/infra/config'
import { createMemoryRateLimiter } from '../src/infra/gates/memory-rate-limit'
import type { Admission, RateRule } from '../src/infra/gates/rate-limit'
import { type AdmitRequest, createRedisRateLimiter } from '../src/infra/gates/redis-rate-limit'
import { rateLimitKey } from '../src/infra/redis/keys'
import { connectAuthed, setUpChannel } from './channel-fanout'
import { CHILD_SCRIPTS, type RelayProcess, spawnRelay } from './child'
import { type BenchEvent, channelIngestKeys } from './fixtures'
import { type FanoutResult, fanout, type IngestResult, ingestPipelined, type Latency, latency } from './load'

export const REDIS_URL = process.env.BENCH_REDIS_URL || 'redis://127.0.0.1:6379'
/** a superuser's URL (trust auth here); its database is only used to create and drop the bench databases */
export const PG_ADMIN_URL = process.env.BENCH_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/postgres'
export const BENCH_HOST = 'bench.test'

const round2 = (x: number) => Math.round(x * 100) / 100
const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e))
const randomCommunityId = () => `bench-${randomBytes(5).toString('hex')}`

// ---------------------------------------------------------------- backends

/** undefined when Redis and PostgreSQL both answer within a few seconds, else why not. */
export async function clusterUnavailable(): Promise<string | undefined> {
  const problems: string[] = []
  const redis = new Redis(REDIS_URL, {
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
    if (pong !== 'PONG') problems.push(`Redis at ${REDIS_URL} answered ${pong}`)
  } catch (error) {
    problems.push(`Redis at ${REDIS_URL}: ${errorText(socketError ?? error)}`)
  } finally {
    redis.disconnect()
  }
  const sql = postgres(PG_ADMIN_URL, { max: 1, connect_timeout: 3, onnotice: () => {} })
  try {
    await sql`select 1`
  } catch (error) {
    problems.push(`PostgreSQL at ${PG_ADMIN_URL}: ${errorText(error)}`)
  } finally {
    await sql.end({ timeout: 2 })
  }
  return problems.length ? problems.join('; ') : undefined
}

const liveDatabases = new Set<string>()

async function adminSql<T>(fn: (sql: postgres.Sql) => Promise<T>): Promise<T> {
  const sql = postgres(PG_ADMIN_URL, { max: 1, connect_timeout: 5, onnotice: () => {} })
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
  const url = new URL(PG_ADMIN_URL)
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
async function deleteCommunityKeys(redis: Redis, community: string): Promise<number> {
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
async function redisCpuSeconds(redis: Redis): Promise<number> {
  const info = await redis.info('cpu')
  const field = (name: string) => Number(new RegExp(`^${name}:([0-9.]+)`, 'm').exec(info)?.[1] ?? Number.NaN)
  return field('used_cpu_user') + field('used_cpu_sys')
}

/**
 * CPU seconds used so far by each local `postgres` server process (Linux /proc; empty elsewhere). Like the
 * Redis figure it counts every client's load. A backend that exits inside a window takes its share with it;
 * a node's pool connections live through the whole window, so theirs is counted.
 */
export function postgresCpuSeconds(): Map<number, number> {
  const out = new Map<number, number>()
  let entries: string[]
  try {
    entries = readdirSync('/proc')
  } catch {
    return out
  }
  for (const entry of entries) {
    if (!/^[0-9]+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const close = stat.lastIndexOf(')')
      if (stat.slice(stat.indexOf('(') + 1, close) !== 'postgres') continue
      const fields = stat.slice(close + 2).split(' ')
      // fields[11], fields[12] = utime, stime (fields 14 and 15 of proc(5)), in clock ticks (100/s on Linux)
      out.set(Number(entry), (Number(fields[11]) + Number(fields[12])) / 100)
    } catch {
      // the process exited between readdir and read
    }
  }
  return out
}

export function postgresCpuSince(before: Map<number, number>): number {
  let total = 0
  for (const [pid, seconds] of postgresCpuSeconds()) total += seconds - (before.get(pid) ?? 0)
  return total
}

/** One run's cluster: a fresh database, a fresh community bound to BENCH_HOST, one relay key for every node. */
interface ClusterEnv {
  config: ConfigInput
  /** admin client (INFO, cleanup); not a gate client */
  redis: Redis
  close(): Promise<void>
}

async function openClusterEnv(): Promise<ClusterEnv> {
  const db = await createBenchDatabase()
  const community = randomCommunityId()
  const redis = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 3_000, maxRetriesPerRequest: 1 })
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
      redisUrl: REDIS_URL,
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
const embeddedConfig = (): ConfigInput => ({ communities: [{ id: randomCommunityId(), hosts: [BENCH_HOST] }] })

function spawnNode(config: ConfigInput, dir: string): Promise<RelayProcess> {
  return spawnRelay(CHILD_SCRIPTS.apiary, dir, 60_000, { BENCH_APIARY_CONFIG: JSON.stringify(config) })
}

/** Nodes are started one after the other: two nodes migrating one fresh database at once would race. */
async function withNodes<T>(
  count: number,
  config: ConfigInput,
  dir: (label: string) => string,
  fn: (nodes: RelayProcess[]) => Promise<T>,
): Promise<T> {
  const nodes: RelayProcess[] = []
  try {
    for (let i = 0; i < count; i++) nodes.push(await spawnNode(config, dir(`node${String.fromCharCode(97 + i)}`)))
    return await fn(nodes)
  } finally {
    await Promise.allSettled(nodes.map((n) => n.close()))
  }
}

/**
 * CPU of all `nodes` over a load generator's timed window, in cores; with `redis`, also of redis-server and of
 * the local PostgreSQL server processes (both shared: every client's load counts). The nodes' event-loop delay
 * over the same window (the worst node's p99), which also starts and stops the relay child's diagnostics
 * (BENCH_CPU_PROFILE, BENCH_ALLOCATION_PROFILE, BENCH_TIMELINE: bench/README.md).
 */
function cpuProbe(nodes: RelayProcess[], redis?: Redis) {
  let t0 = 0
  let relay0 = 0
  let redis0 = 0
  let pg0 = new Map<number, number>()
  const figures = { relayCores: Number.NaN, redisCores: Number.NaN, postgresCores: Number.NaN, loopDelayP99Ms: Number.NaN }
  const relayCpu = async () => (await Promise.all(nodes.map((n) => n.cpuMicros()))).reduce((a, b) => a + b, 0)
  return {
    figures,
    onStart: async () => {
      await Promise.all(nodes.map((n) => n.loopDelayStart()))
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
      const delays = await Promise.all(nodes.map((n) => n.loopDelayStop()))
      figures.loopDelayP99Ms = Math.max(...delays.map((d) => d.p99Ms))
      if (redis) {
        figures.postgresCores = pg0.size ? round2((postgresCpuSince(pg0) * 1000) / ms) : Number.NaN
        figures.redisCores = round2((((await redisCpuSeconds(redis)) - redis0) * 1000) / ms)
      }
    },
  }
}

// ---------------------------------------------------------------- cluster-fanout

/**
 * cross-node: publisher on node A, subscribers on node B (the measured path: A stores, publishes on Redis,
 * B's bridge receives and fans out). same-node: one cluster node, publisher and subscribers on it (cluster
 * store and bus, no hop between nodes). single-node: one embedded node (SQLite, in-process bus) — the
 * baseline, as in the `fanout` scenario.
 */
export const FANOUT_VARIANTS = ['cross-node', 'single-node', 'same-node'] as const
export type FanoutVariant = (typeof FANOUT_VARIANTS)[number]

export type ClusterFanoutResult = FanoutResult & {
  variant: FanoutVariant
  relayCores: number
  redisCores: number
  postgresCores: number
  loopDelayP99Ms: number
}

export async function clusterFanout(
  variant: FanoutVariant,
  opts: { subscribers: number; events: BenchEvent[]; dir: (label: string) => string },
): Promise<ClusterFanoutResult> {
  const env = variant === 'single-node' ? undefined : await openClusterEnv()
  try {
    return await withNodes(variant === 'cross-node' ? 2 : 1, env?.config ?? embeddedConfig(), opts.dir, async (nodes) => {
      const probe = cpuProbe(nodes, env?.redis)
      const r = await fanout(nodes[nodes.length - 1]!.url, {
        subscribers: opts.subscribers,
        events: opts.events,
        host: BENCH_HOST,
        publisherUrl: nodes[0]!.url,
        onStart: probe.onStart,
        onEnd: probe.onEnd,
      })
      return { ...r, variant, ...probe.figures }
    })
  } finally {
    await env?.close()
  }
}

// ---------------------------------------------------------------- ingest-pg

/**
 * postgres: kind 1 into one cluster node (PostgreSQL store, Redis gates); sqlite: the same into one embedded
 * node (same kind of community, bound to BENCH_HOST) — the reference for the PostgreSQL figure; postgres
 * kind-9: NIP-29 posts to a public channel on a cluster node, from connections authenticated (NIP-42) as
 * every author, all of them members (9007 + 9000s before the clock) — the kind-1 row is its reference.
 */
export const INGEST_VARIANTS = ['postgres', 'sqlite', 'postgres kind-9'] as const
export type IngestVariant = (typeof INGEST_VARIANTS)[number]

export type BackendIngestResult = IngestResult & {
  variant: IngestVariant
  relayCores: number
  redisCores: number
  postgresCores: number
  loopDelayP99Ms: number
  setupMs: number
}

/** Pipelined ingest into one node: cluster backends (PostgreSQL store, Redis gates) or embedded SQLite. */
export async function ingestOnBackend(
  variant: IngestVariant,
  opts: {
    events: BenchEvent[]
    channel: { setup: BenchEvent[]; posts: BenchEvent[] }
    connections: number
    window: number
    maxSeconds: number
    dir: (label: string) => string
  },
): Promise<BackendIngestResult> {
  const env = variant === 'sqlite' ? undefined : await openClusterEnv()
  try {
    return await withNodes(1, env?.config ?? embeddedConfig(), opts.dir, async ([node]) => {
      const url = node!.url
      let setupMs = 0
      let openConnection: ((i: number) => Promise<WebSocket>) | undefined
      if (variant === 'postgres kind-9') {
        const t0 = performance.now()
        await setUpChannel(url, opts.channel.setup, BENCH_HOST)
        setupMs = Math.round(performance.now() - t0)
        const authors = channelIngestKeys()
        openConnection = () => connectAuthed(url, authors, BENCH_HOST)
      }
      const probe = cpuProbe([node!], env?.redis)
      const r = await ingestPipelined(url, {
        events: variant === 'postgres kind-9' ? opts.channel.posts : opts.events,
        connections: opts.connections,
        window: opts.window,
        maxSeconds: opts.maxSeconds,
        host: BENCH_HOST,
        ...(openConnection ? { openConnection } : {}),
        onStart: probe.onStart,
        onEnd: probe.onEnd,
      })
      return { ...r, variant, setupMs, ...probe.figures }
    })
  } finally {
    await env?.close()
  }
}

// ---------------------------------------------------------------- admission

export interface AdmissionCell {
  /** e.g. `redis admit ×16`, `redis admitMany/32 ×1`, `memory admit ×16` */
  label: string
  backend: 'redis' | 'memory'
  call: 'admit' | 'admitMany'
  callers: number
  /** decisions per call */
  batch: number
  calls: number
  decisions: number
  decisionsPerSec: number
  elapsedMs: number
  /** one call (admit: one decision; admitMany: the whole batch), caller's view */
  callLatency: Latency
  refused: number
  /** calls that rejected (GateError: timeout, disconnect) */
  failed: number
  /** redis-server CPU over the cell (every client's, not only ours), cores */
  redisCores: number
  loadGenCores: number
}

export interface AdmissionOptions {
  /** wall time per cell */
  seconds: number
  /** decisions per cell at most */
  maxDecisions: number
  /** concurrency levels for single admits */
  callers: number[]
  /** admitMany batch sizes, each at every level of batchCallers */
  batches: number[]
  batchCallers: number[]
  /** callers for the memory reference */
  memoryCallers: number
  /** run the cells in reverse order (bench/run.ts alternates rounds) */
  reverse?: boolean
}

// Wide open: every decision is an admission, so every script call takes the write path (GET, SET PX).
const RULE: RateRule = { ratePerSecond: 1e6, burst: 1e6 }

/**
 * Admission decisions per second against the shared Redis, in this process (a client-side measurement: the
 * gate client a node uses, one connection, the GCRA script). `admit`: C callers, each awaiting one decision
 * per round trip (ioredis writes concurrent commands onto the one connection as they come, so C > 1 is
 * pipelining across callers). `admitMany`: C callers, each sending batches of B decisions in one pipeline —
 * what a principal actor does when B admits queued up behind an in-flight call. `memory`: the embedded
 * limiter, the ceiling with no network at all. Every caller is its own principal (its own keys).
 */
export async function admissionBench(opts: AdmissionOptions): Promise<AdmissionCell[]> {
  const community = randomCommunityId()
  // the options the limiter requires (it refuses a client that would queue through an outage), connected first
  const redis = new Redis(REDIS_URL, { enableOfflineQueue: false, commandTimeout: 1_000, lazyConnect: true, maxRetriesPerRequest: 1 })
  redis.on('error', () => {})
  const admin = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 })
  admin.on('error', () => {})
  const memory = createMemoryRateLimiter()
  try {
    await redis.connect()
    await admin.connect()
    const limiter = createRedisRateLimiter({ redis })
    const maxCallers = Math.max(...opts.callers, ...opts.batchCallers, opts.memoryCallers)
    const principals = Array.from({ length: maxCallers }, () => randomBytes(32).toString('hex'))
    const keyOf = (caller: number, type: 'events' | 'reqs' = 'events') => rateLimitKey(community, principals[caller]!, type)
    // warm-up: the script gets loaded (EVAL, then EVALSHA), the connection and JIT warm
    for (let i = 0; i < 200; i++) await limiter.admit(keyOf(i % maxCallers), RULE)
    await limiter.admitMany(Array.from({ length: 32 }, (_, i) => ({ key: keyOf(i % maxCallers), rule: RULE })))

    type Plan = Pick<AdmissionCell, 'label' | 'backend' | 'call' | 'callers' | 'batch'> & {
      run: (caller: number) => Promise<readonly Admission[]>
    }
    const plans: Plan[] = []
    for (const c of opts.callers) {
      plans.push({
        label: `redis admit ×${c}`,
        backend: 'redis',
        call: 'admit',
        callers: c,
        batch: 1,
        run: async (i) => [await limiter.admit(keyOf(i), RULE)],
      })
    }
    for (const b of opts.batches) {
      for (const c of opts.batchCallers) {
        // one principal's waiting admits: its events and reqs keys, interleaved (the same key may repeat)
        const batches = Array.from({ length: c }, (_, i): AdmitRequest[] =>
          Array.from({ length: b }, (_, j) => ({ key: keyOf(i, j % 4 === 3 ? 'reqs' : 'events'), rule: RULE })),
        )
        plans.push({
          label: `redis admitMany/${b} ×${c}`,
          backend: 'redis',
          call: 'admitMany',
          callers: c,
          batch: b,
          run: (i) => limiter.admitMany(batches[i]!),
        })
      }
    }
    const m = opts.memoryCallers
    plans.push({
      label: `memory admit ×${m}`,
      backend: 'memory',
      call: 'admit',
      callers: m,
      batch: 1,
      run: async (i) => [await memory.admit(keyOf(i), RULE)],
    })
    if (opts.reverse) plans.reverse()

    const out: AdmissionCell[] = []
    for (const plan of plans) {
      const { run, ...cell } = plan
      const redis0 = await redisCpuSeconds(admin)
      const r = await timedCalls(plan.callers, plan.batch, opts.seconds, opts.maxDecisions, run)
      const redisCores = round2((((await redisCpuSeconds(admin)) - redis0) * 1000) / r.elapsedMs)
      out.push({ ...cell, ...r, redisCores })
    }
    // cells in their canonical order, whatever order they ran in
    return opts.reverse ? out.reverse() : out
  } finally {
    await memory.close()
    if (redis.status === 'ready') await deleteCommunityKeys(admin, community).catch(() => 0)
    redis.disconnect()
    admin.disconnect()
  }
}

/** `callers` loops, each calling `run` back to back, until `seconds` pass or `maxDecisions` are taken. */
async function timedCalls(
  callers: number,
  batch: number,
  seconds: number,
  maxDecisions: number,
  run: (caller: number) => Promise<readonly Admission[]>,
) {
  const maxCalls = Math.max(1, Math.ceil(maxDecisions / batch))
  const lat = new Float64Array(Math.min(maxCalls, 200_000))
  let nLat = 0
  let calls = 0
  let decisions = 0
  let refused = 0
  let failed = 0
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const deadline = t0 + seconds * 1000
  await Promise.all(
    Array.from({ length: callers }, async (_, caller) => {
      while (calls < maxCalls && performance.now() < deadline) {
        calls++
        const s = performance.now()
        try {
          const answers = await run(caller)
          decisions += answers.length
          for (const a of answers) if (!a.allowed) refused++
        } catch {
          failed++
        }
        if (nLat < lat.length) lat[nLat++] = performance.now() - s
      }
    }),
  )
  const elapsedMs = performance.now() - t0
  const cpu = process.cpuUsage(cpu0)
  return {
    calls,
    decisions,
    decisionsPerSec: Math.round((decisions * 1000) / elapsedMs),
    elapsedMs: Math.round(elapsedMs),
    callLatency: latency(lat, nLat),
    refused,
    failed,
    loadGenCores: round2((cpu.user + cpu.system) / 1000 / elapsedMs),
  }
}
