// The agents scenario's phases: N AgentClients spread over K load processes (bench/processes/agent-shard.ts,
// coordinated from here over IPC) against an Apiary child on a fixed port, which is SIGKILLed and restarted on
// the same port and data directory under them (bench/lib/agents/storm.ts). Returns figures and asserts
// nothing. The steady handshake is measured by a probe process that does only handshakes while the fleet
// heartbeats and trades jobs, so that the load processes' own work stays out of it. Each load process connects
// from a loopback address of its own (sourceAddress).

import { knobs } from '../../knobs'
import { freePort } from '../free-port'
import type { LoopDelay } from '../loop-delay'
import { openFilesLimit, relayCpu, rssBytes } from '../proc-readings'
import type { MemorySample } from '../relay-ipc'
import { bucketQuantile, histogramOf, scrapeMetrics } from '../relay-metrics'
import { spawnRelay } from '../relay-process'
import { deliveryFigures } from './fleet'
import { checkFleetFitsHost, sourceAddress } from './host-limits'
import type { ShardLoad } from './shard-protocol'
import {
  askAll,
  collectDeliveries,
  collectLedger,
  fleetStatus,
  forkShard,
  type HandshakeFigures,
  MEAN_HEARTBEAT_MS,
  mergeHandshakes,
  nowEpochMs,
  round2,
  type Shard,
  STABLE_MS,
  shareOf,
  sleep,
  until,
} from './shards'
import { type StormBench, type StormFigures, storm } from './storm'

export interface AgentsOptions {
  agents: number
  /** load processes the fleet is spread over (the probe is one more) */
  shards: number
  /** agents started per wave over all shards; each shard awaits its part of a wave (all ACTIVE) before the next */
  waveSize: number
  /** the handshake rate offered over all shards while the fleet starts is 1000 / waveSpacingMs per second */
  waveSpacingMs: number
  /** handshakes the probe does once the fleet is up, one start() every probeIntervalMs (open loop) */
  probeHandshakes: number
  probeIntervalMs: number
  /** agents whose application subscribes to the job kind (each verifies every inbound event) */
  subscribers: number
  /** agents that publish a job in turn during the traffic phase, one every trafficIntervalMs */
  trafficPublishers: number
  trafficIntervalMs: number
  /** agents that publish one job each while the relay is down (each must resolve queued: true) */
  stormPublishers: number
  recoveryTimeoutMs: number
  /** a second storm with this limits.maxConcurrentAuth, so shaping is seen at work (0: no second storm) */
  shapedMaxConcurrentAuth: number
  dir: string
}

export interface AgentsResult {
  agents: number
  shards: number
  active: number
  openFilesLimit: number
  handshake: {
    /** the probe's, while the fleet is up and busy */
    probeHandshakes: number
    steady: HandshakeFigures
    /** the relay's apiary_handshake_seconds (socket open → AUTH OK) over the probe: bucket upper bounds */
    relaySideP50Ms: number
    relaySideP99Ms: number
    /** the fleet's own start-up in waves (the load processes busy signing): all, and the second half */
    waves: HandshakeFigures
    wavesSecondHalf: HandshakeFigures
  }
  probeLoad: ShardLoad
  /** the relay over the probe's span */
  relayLoopDelay: LoopDelay
  /** per fleet shard: while the fleet started, and over the steady span (probe and traffic) */
  shardLoad: { startup: ShardLoad[]; steady: ShardLoad[] }
  memory: { before: MemorySample; after: MemorySample; rssPerAgent: number; heapPerAgent: number }
  steady: {
    seconds: number
    relayCores: number
    loadGenCores: number
    /** the relay's VmRSS, the largest of a sample every second */
    relayRssMaxBytes: number
    /** the fleet's heartbeats over the window, from the client's schedule (MEAN_HEARTBEAT_MS) */
    heartbeats: number
    /** the relay's CPU (every thread, /proc) over the window ÷ heartbeats: also carries the probe and the jobs */
    relayCpuPerHeartbeatUs: number
  }
  traffic: { published: number; deliveries: number; duplicates: number; missing: number }
  storm: StormFigures
  /** the same storm again with limits.maxConcurrentAuth = opts.shapedMaxConcurrentAuth */
  shapedStorm?: StormFigures
}

/** the storm's view of a run, with the scenario's own options */
type AgentsRun = Omit<StormBench, 'opts'> & { opts: AgentsOptions }

const HANDSHAKE_HISTOGRAM = 'apiary_handshake_seconds'
const JOB_FILTER = { kinds: [5050], '#t': ['bench-agents'] }

export async function agentsStorm(opts: AgentsOptions): Promise<AgentsResult> {
  checkFleetFitsHost(opts)
  const port = await freePort()
  // the port is fixed so the agents reconnect to the same URL after the restart; limits are replaced whole
  const config = (maxConcurrentAuth?: number) => ({
    port,
    limits: { maxConnectionsPerIp: 1e6, maxPendingUpgradesPerIp: 1e6, ...(maxConcurrentAuth ? { maxConcurrentAuth } : {}) },
  })
  const spawn = (maxConcurrentAuth?: number) => spawnRelay('apiary', opts.dir, config(maxConcurrentAuth))
  const bench: AgentsRun = { opts, shards: [], current: { relay: await spawn() }, spawn }
  const probe = forkShard('probe')
  try {
    bench.shards = Array.from({ length: opts.shards }, (_, k) => forkShard(`shard ${k + 1}`, knobs.agentsLoadNodeArgs))
    const url = bench.current.relay.url
    await askAll(bench.shards, (k) => ({
      type: 'Create',
      url,
      first: Math.floor((k * opts.agents) / opts.shards),
      count: shareOf(opts.agents, k, opts.shards),
      localAddress: sourceAddress(k),
    }))
    try {
      const s = await startFleet(bench)
      const st = await runSteady(bench, probe)
      const first = await storm(bench)
      const shaped = opts.shapedMaxConcurrentAuth > 0 ? await stormAgain(bench, opts.shapedMaxConcurrentAuth) : undefined
      const { active } = await fleetStatus(bench.shards)
      const handshake = {
        probeHandshakes: opts.probeHandshakes,
        steady: st.steadyHandshake,
        relaySideP50Ms: st.relaySideP50Ms,
        relaySideP99Ms: st.relaySideP99Ms,
        waves: s.waves,
        wavesSecondHalf: s.wavesSecondHalf,
      }
      return {
        ...{
          agents: opts.agents,
          shards: opts.shards,
          active,
          openFilesLimit: openFilesLimit(),
          handshake,
          probeLoad: st.probeLoad,
          relayLoopDelay: st.relayLoopDelay,
        },
        ...{
          shardLoad: { startup: s.startup, steady: st.steadyLoad },
          memory: s.memory,
          steady: st.steady,
          traffic: st.traffic,
          storm: first,
        },
        ...(shaped ? { shapedStorm: shaped } : {}),
      }
    } finally {
      await askAll(bench.shards, { type: 'StopAll' }, 120_000).catch((e: Error) => process.stderr.write(`    ${e.message}\n`))
    }
  } finally {
    await Promise.all([probe, ...bench.shards].map((s) => s.close()))
    await bench.current.relay.close()
  }
}

// ---------------------------------------------------------------- 1. the fleet starts

async function startFleet(bench: AgentsRun) {
  const { opts, shards, current } = bench
  const before = await current.relay.memory()
  await askAll(shards, { type: 'MeasureStart' })
  const waveSize = Math.ceil(opts.waveSize / shards.length)
  const waves = await askAll(shards, { type: 'StartInWaves', waveSize, spacingMs: opts.waveSpacingMs * shards.length })
  const startup = await askAll(shards, { type: 'MeasureStop' })
  await sleep(1_000)
  const after = await current.relay.memory()
  const n = opts.agents
  const memory = {
    before,
    after,
    rssPerAgent: Math.round((after.rss - before.rss) / n),
    heapPerAgent: Math.round((after.heapUsed + after.external - before.heapUsed - before.external) / n),
  }
  return {
    memory,
    startup,
    waves: mergeHandshakes(waves.map((w) => w.all)),
    wavesSecondHalf: mergeHandshakes(waves.map((w) => w.secondHalf)),
  }
}

// ---------------------------------------------------------------- 2. steady: the probe, under traffic

async function runSteady(bench: AgentsRun, probe: Shard) {
  const { opts, shards, current } = bench
  const since = Math.floor(Date.now() / 1000) - 5
  await askAll(shards, (k) => ({ type: 'Subscribe', count: shareOf(opts.subscribers, k, shards.length), filter: { ...JOB_FILTER, since } }))
  await sleep(1_000)
  const cpu0 = await current.relay.cpuMicros()
  const procCpu = relayCpu(current.relay.pid)
  const procCpu0 = procCpu.seconds()
  const rss = watchRss(current.relay.pid)
  await askAll(shards, { type: 'MeasureStart' })
  const t0 = performance.now()
  let sent = 0
  const timer = setInterval(() => {
    const k = sent % shards.length
    const publishers = Math.max(1, shareOf(opts.trafficPublishers, k, shards.length))
    // a shard gone mid-run fails the run at its next awaited request; this one must not crash the runner
    shards[k]!.ask({ type: 'Publish', publishers, content: `bench job ${sent++}` }).catch(() => {})
  }, opts.trafficIntervalMs)
  const probed = await runProbe(bench, probe)
  // the storm must find every agent past the client's stable period, as after a long steady state
  const { lastActiveEpochMs } = await fleetStatus(shards)
  await sleep(Math.max(10_000 - (performance.now() - t0), lastActiveEpochMs + STABLE_MS + 1_000 - nowEpochMs()))
  clearInterval(timer)
  const steadyLoad = await askAll(shards, { type: 'MeasureStop' })
  const seconds = (performance.now() - t0) / 1000
  const procCpuSeconds = procCpu.seconds() - procCpu0
  const heartbeats = (opts.agents * seconds * 1000) / MEAN_HEARTBEAT_MS
  const steady = {
    seconds: round2(seconds),
    relayCores: round2(((await current.relay.cpuMicros()) - cpu0) / 1e6 / seconds),
    loadGenCores: round2(steadyLoad.reduce((s, l) => s + l.cores, 0) + (probed.probeLoad.cores * probed.probeSeconds) / seconds),
    relayRssMaxBytes: rss.stop(),
    heartbeats: Math.round(heartbeats),
    relayCpuPerHeartbeatUs: round2((procCpuSeconds * 1e6) / heartbeats),
  }
  const ledger = await collectLedger(shards)
  const delivered = async () => deliveryFigures((await collectDeliveries(shards)).deliveries, ledger.all)
  await until(async () => (await delivered()).missing === 0, 5_000, 250)
  const { missed: _, ...traffic } = await delivered()
  return { ...probed, steady, traffic: { published: sent, ...traffic }, steadyLoad }
}

/** the relay's VmRSS from /proc every second until stopped (no IPC to a busy relay): the largest */
function watchRss(pid: number): { stop(): number } {
  let max = 0
  const sample = () => {
    const bytes = rssBytes(pid)
    if (bytes > max) max = bytes
  }
  sample()
  const timer = setInterval(sample, 1_000)
  return {
    stop() {
      clearInterval(timer)
      sample()
      return max
    },
  }
}

async function runProbe(bench: AgentsRun, probe: Shard) {
  const { opts, current } = bench
  const before = histogramOf(await scrapeMetrics(current.relay.url), HANDSHAKE_HISTOGRAM)
  await current.relay.spanStart()
  const t0 = performance.now()
  const probed = await probe.ask({
    type: 'Probe',
    url: current.relay.url,
    count: opts.probeHandshakes,
    intervalMs: opts.probeIntervalMs,
    localAddress: sourceAddress(opts.shards),
  })
  const probeSeconds = (performance.now() - t0) / 1000
  const relayLoopDelay = await current.relay.spanStop()
  const after = histogramOf(await scrapeMetrics(current.relay.url), HANDSHAKE_HISTOGRAM)
  return {
    probeLoad: probed.load,
    probeSeconds,
    relayLoopDelay,
    steadyHandshake: mergeHandshakes([probed.samples]),
    relaySideP50Ms: bucketQuantile(before, after, 0.5) * 1000,
    relaySideP99Ms: bucketQuantile(before, after, 0.99) * 1000,
  }
}

// ---------------------------------------------------------------- 3. the storm again, with a lower AUTH limit

/** After the first storm every agent must again be past its stable period, or it would reconnect later. */
async function stormAgain(bench: AgentsRun, maxConcurrentAuth: number): Promise<StormFigures> {
  const { lastActiveEpochMs } = await fleetStatus(bench.shards)
  await sleep(Math.max(0, lastActiveEpochMs + STABLE_MS + 1_000 - nowEpochMs()))
  return storm(bench, maxConcurrentAuth)
}
