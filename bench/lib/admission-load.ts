// Admission decisions per second against the shared Redis, in this process: the gate client a node uses, on
// one connection, running the GCRA script; and the embedded limiter beside it, the ceiling with no network.
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import {
  type Admission,
  type AdmitRequest,
  createMemoryRateLimiter,
  createRedisRateLimiter,
  type RateRule,
  rateLimitKey,
} from '../internal'
import { knobs } from '../knobs'
import { deleteCommunityKeys, randomCommunityId, redisCpuSeconds } from './cluster-backends'
import { type Latency, latency, round2 } from './load/latency'

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
  /** run the cells in reverse order (rounds alternate the order) */
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
  const redis = new Redis(knobs.redisUrl, { enableOfflineQueue: false, commandTimeout: 1_000, lazyConnect: true, maxRetriesPerRequest: 1 })
  redis.on('error', () => {})
  const admin = new Redis(knobs.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 })
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
