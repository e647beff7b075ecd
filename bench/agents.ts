// The **agents** scenario (issue 11, "Proven"): N AgentClients (bench/agent-fleet.ts) in this one process
// against an Apiary child (bench/serve-apiary.ts) on a fixed port, which is SIGKILLed and restarted on the same
// port and data directory. Returns figures and asserts nothing: steady handshake latency, relay memory per
// agent, deliveries and duplicates under traffic, then the storm: time until all N are ACTIVE again, relay CPU,
// AUTHs refused by shaping, queued publishes lost and duplicates delivered.
import { monitorEventLoopDelay } from 'node:perf_hooks'
import type { AgentClient, PublishResult } from '../src/client/index'
import { AgentFleet, PublishLedger } from './agent-fleet'
import { CHILD_SCRIPTS, type LoopDelay, type MemorySample, type RelayProcess, spawnRelay } from './child'
import { type Latency, latency } from './load'
import { bucketQuantile, counterOf, freePort, histogramOf, isAlive, openFilesLimit, relayCpu, scrapeMetrics, storedIds } from './relay-readings'

export interface AgentsOptions {
  agents: number
  /** agents started per wave; a wave is awaited (all ACTIVE) before the next starts */
  waveSize: number
  /** between two start() calls of one wave: the handshake rate offered is 1000 / waveSpacingMs per second */
  waveSpacingMs: number
  /** agents whose application subscribes to the job kind (each inbound event costs a noble verify, ~1.4 ms) */
  subscribers: number
  /** agents that publish a job in turn during the traffic phase, one every trafficIntervalMs */
  trafficPublishers: number
  trafficIntervalMs: number
  /** agents that publish one job each while the relay is down (each must resolve queued: true) */
  stormPublishers: number
  recoveryTimeoutMs: number
  dir: string
}

export interface AgentsResult {
  agents: number
  active: number
  openFilesLimit: number
  handshake: {
    steadyAgents: number
    steady: Latency
    all: Latency
    socketToActiveSteady: Latency
    authSteady: Latency
    registerSteady: Latency
    /** the relay's apiary_handshake_seconds (socket open → AUTH OK) over the steady waves: bucket upper bounds */
    relaySideP50Ms: number
    relaySideP99Ms: number
  }
  /** event-loop delay of this (the load) process and of the relay over the steady waves */
  loadLoopDelay: LoopDelay
  relayLoopDelay: LoopDelay
  memory: { before: MemorySample; after: MemorySample; rssPerAgent: number; heapPerAgent: number }
  steady: { seconds: number; relayCores: number; loadGenCores: number }
  traffic: { published: number; deliveries: number; duplicates: number; missing: number }
  storm: StormFigures
}

export interface StormFigures {
  outageMs: number
  /** restart (relay listening again) → all N ACTIVE; NaN when not all were within recoveryTimeoutMs */
  allActiveSeconds: number
  /** per agent: restart → its ACTIVE */
  reactive: Latency
  notActive: number
  relayCores: number
  relayPeakCores: number
  loadGenCores: number
  shapedAuth: number
  shapedSeen: number
  reconnects: number
  publishedQueued: number
  notQueued: number
  queuedLost: number
  ackedLost: number
  /** over traffic and outage jobs, every subscriber */
  deliveries: number
  duplicates: number
  missing: number
  /** the first few missing deliveries: subscriber index, event id, how its publish resolved, created_at */
  missed: string[]
  causes: Record<string, number>
}

const HANDSHAKE_HISTOGRAM = 'apiary_handshake_seconds'
const JOB_FILTER = { kinds: [5050], '#t': ['bench-agents'] }
/** the client's reconnect.stableMs default: backoff restarts at 1 s only for an agent ACTIVE that long */
const STABLE_MS = 30_000
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const round2 = (x: number) => Math.round(x * 100) / 100

/** `p`, or a rejection after `ms` (the timer is cleared either way, so nothing outlives the race) */
async function within<T>(p: Promise<T>, ms: number, what: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(what())), ms)
  })
  try {
    return await Promise.race([p, timeout])
  } finally {
    clearTimeout(timer)
  }
}

/** CPU this process used since `since` (a process.cpuUsage() reading taken at wall time `t0`), in cores */
function cpuCores(since: NodeJS.CpuUsage, t0: number): number {
  const d = process.cpuUsage(since)
  return round2((d.user + d.system) / 1000 / Math.max(1, performance.now() - t0))
}

/** a kind 5050 job with the subscribers' tag, its result (and created_at) in the ledger */
function publishJob(agent: AgentClient, ledger: PublishLedger, content: string): Promise<PublishResult> {
  const createdAt = Math.floor(Date.now() / 1000)
  return ledger.record(agent.publish({ kind: 5050, content, tags: [['t', 'bench-agents']], created_at: createdAt }), createdAt)
}

async function until(check: () => boolean, timeoutMs: number, stepMs = 25): Promise<boolean> {
  const end = performance.now() + timeoutMs
  while (!check()) {
    if (performance.now() > end) return false
    await sleep(stepMs)
  }
  return true
}

export async function agentsStorm(opts: AgentsOptions): Promise<AgentsResult> {
  const port = await freePort()
  // the port is fixed so the agents reconnect to the same URL after the restart
  const env = { BENCH_APIARY_CONFIG: JSON.stringify({ port }) }
  const spawn = () => spawnRelay(CHILD_SCRIPTS.apiary, opts.dir, 60_000, env)
  // the storm replaces the process; whichever is current is closed at the end (a killed one returns at once)
  const current = { relay: await spawn() }
  try {
    const fleet = await AgentFleet.create(current.relay.url, opts.agents)
    try {
      const { handshake, memory, loadLoopDelay, relayLoopDelay } = await startInWaves(fleet, current.relay, opts)
      const { traffic, steady, ledger } = await runTraffic(fleet, current.relay, opts)
      const figures = await storm(fleet, current, spawn, ledger, opts)
      return { agents: opts.agents, active: fleet.active, openFilesLimit: openFilesLimit(), handshake, loadLoopDelay, relayLoopDelay, memory, steady, traffic, storm: figures }
    } finally {
      await within(fleet.stopAll(), 120_000, () => 'the agents did not stop within 120 s').catch((e: Error) => process.stderr.write(`    ${e.message}\n`))
    }
  } finally {
    await current.relay.close()
  }
}

// ---------------------------------------------------------------- 1. steady-state handshake

async function startInWaves(fleet: AgentFleet, relay: RelayProcess, opts: AgentsOptions) {
  const before = await relay.memory()
  const n = fleet.agents.length
  // steady: the second half of the waves, started with ≥ N/2 agents ACTIVE and heartbeating, JIT and pools warm
  const steadyFrom = Math.ceil(n / 2 / opts.waveSize) * opts.waveSize
  const eld = monitorEventLoopDelay({ resolution: 5 })
  let histogramAtSteady: ReturnType<typeof histogramOf> = []
  for (let w = 0; w < n; w += opts.waveSize) {
    if (w === steadyFrom) {
      histogramAtSteady = histogramOf(await scrapeMetrics(relay.url), HANDSHAKE_HISTOGRAM)
      await relay.loopDelayStart()
      eld.enable()
    }
    const wave = fleet.agents.slice(w, w + opts.waveSize)
    const started = Promise.all(
      wave.map(async (t, j) => {
        await sleep(j * opts.waveSpacingMs)
        await fleet.start(t)
      }),
    )
    await within(started, 60_000, () => `wave at agent ${w}: not all ACTIVE within 60 s (${fleet.active} ACTIVE)`)
  }
  eld.disable()
  const relayLoopDelay = await relay.loopDelayStop()
  const histogram = histogramOf(await scrapeMetrics(relay.url), HANDSHAKE_HISTOGRAM)
  await sleep(1_000)
  const after = await relay.memory()
  const steadyAgents = fleet.agents.slice(steadyFrom)
  const ms = (ts: typeof fleet.agents, from: (t: (typeof ts)[number]) => number, to: (t: (typeof ts)[number]) => number) =>
    latency(Float64Array.from(ts, (t) => to(t) - from(t)))
  const handshake = {
    steadyAgents: steadyAgents.length,
    steady: ms(steadyAgents, (t) => t.startedAt, (t) => t.activeAt),
    all: ms(fleet.agents, (t) => t.startedAt, (t) => t.activeAt),
    socketToActiveSteady: ms(steadyAgents, (t) => t.discoveredAt, (t) => t.activeAt),
    authSteady: ms(steadyAgents, (t) => t.discoveredAt, (t) => t.authenticatedAt),
    registerSteady: ms(steadyAgents, (t) => t.authenticatedAt, (t) => t.activeAt),
    relaySideP50Ms: bucketQuantile(histogramAtSteady, histogram, 0.5) * 1000,
    relaySideP99Ms: bucketQuantile(histogramAtSteady, histogram, 0.99) * 1000,
  }
  const memory = {
    before,
    after,
    rssPerAgent: Math.round((after.rss - before.rss) / n),
    heapPerAgent: Math.round((after.heapUsed + after.external - before.heapUsed - before.external) / n),
  }
  const loadLoopDelay = { p50Ms: round2(eld.percentile(50) / 1e6), p99Ms: round2(eld.percentile(99) / 1e6), maxMs: round2(eld.max / 1e6), meanMs: round2(eld.mean / 1e6) }
  return { handshake, memory, loadLoopDelay, relayLoopDelay }
}

// ---------------------------------------------------------------- 2. traffic

async function runTraffic(fleet: AgentFleet, relay: RelayProcess, opts: AgentsOptions) {
  const since = Math.floor(Date.now() / 1000) - 5
  for (const t of fleet.agents.slice(0, opts.subscribers)) fleet.subscribe(t, { ...JOB_FILTER, since })
  await sleep(1_000)
  const ledger = new PublishLedger()
  const publishers = fleet.agents.slice(-opts.trafficPublishers)
  const cpu0 = await relay.cpuMicros()
  const load0 = process.cpuUsage()
  const t0 = performance.now()
  let sent = 0
  const timer = setInterval(() => {
    const t = publishers[sent % publishers.length]!
    void publishJob(t.agent, ledger, `bench job ${sent++}`)
  }, opts.trafficIntervalMs)
  // the storm must find every agent past the client's stable period, as after a long steady state
  const lastActive = Math.max(...fleet.agents.map((t) => t.activeAt))
  await sleep(Math.max(10_000, lastActive + STABLE_MS + 1_000 - performance.now()))
  clearInterval(timer)
  await ledger.settled()
  const seconds = (performance.now() - t0) / 1000
  const steady = {
    seconds: round2(seconds),
    relayCores: round2(((await relay.cpuMicros()) - cpu0) / 1e6 / seconds),
    loadGenCores: cpuCores(load0, t0),
  }
  await until(() => fleet.deliveryFigures(ledger.all()).missing === 0, 5_000, 100)
  const { missed: _, ...delivered } = fleet.deliveryFigures(ledger.all())
  return { traffic: { published: sent, ...delivered }, steady, ledger }
}

// ---------------------------------------------------------------- 3. the storm

async function storm(fleet: AgentFleet, current: { relay: RelayProcess }, spawn: () => Promise<RelayProcess>, ledger: PublishLedger, opts: AgentsOptions): Promise<StormFigures> {
  const killed = current.relay
  const reconnects0 = fleet.reconnects()
  fleet.causes = {}
  fleet.recordCauses = true
  const tKill = performance.now()
  process.kill(killed.pid, 'SIGKILL')
  await until(() => !isAlive(killed.pid), 10_000, 10)
  // the kernel closed the relay's sockets: every agent sees its close and leaves ACTIVE
  await until(() => fleet.active === 0, 10_000)
  const n = fleet.agents.length
  const stormers = Array.from({ length: opts.stormPublishers }, (_, i) => fleet.agents[Math.floor((i * n) / opts.stormPublishers)]!)
  const results = await Promise.all(stormers.map((t, i) => publishJob(t.agent, ledger, `bench job during the outage ${i}`)))
  const notQueued = results.filter((r) => r.ok || !r.queued).length

  const relay = await spawn()
  current.relay = relay
  const tReady = performance.now()
  const cpu = relayCpu(relay.pid)
  const load0 = process.cpuUsage()
  let peak = 0
  let last = { at: tReady, seconds: cpu.seconds() }
  const cpuAtReady = last.seconds
  const sampler = setInterval(() => {
    const now = { at: performance.now(), seconds: cpu.seconds() }
    peak = Math.max(peak, (now.seconds - last.seconds) / ((now.at - last.at) / 1000))
    last = now
  }, 1_000)
  const allActive = await until(() => fleet.active === n, opts.recoveryTimeoutMs)
  const tAll = performance.now()
  clearInterval(sampler)
  const relayCores = (cpu.seconds() - cpuAtReady) / ((tAll - tReady) / 1000)
  const loadGenCores = cpuCores(load0, tReady)
  const notActive = n - fleet.active
  const reactive = latency(Float64Array.from(fleet.agents.filter((t) => t.lastActiveAt > tReady), (t) => t.lastActiveAt - tReady))
  const shapedAuth = counterOf(await scrapeMetrics(relay.url), 'apiary_auth_shaped_total')
  fleet.recordCauses = false

  // every publish that resolved queued: true (the outage's, and traffic in flight at the kill) is flushed
  // after its agent's handshake, one per 50 ms; then the relay is asked for them
  await until(() => fleet.agents.every((t) => t.agent.metrics().queueLength === 0), 30_000, 100)
  const stored = await storedIds(relay.url, [...ledger.all()])
  const queuedLost = [...ledger.queued].filter((id) => !stored.has(id)).length
  const ackedLost = [...ledger.acked].filter((id) => !stored.has(id)).length
  await until(() => fleet.deliveryFigures(ledger.all()).missing === 0, 10_000, 100)
  await sleep(1_000) // a duplicate from the resume's overlap would arrive by now
  const delivered = fleet.deliveryFigures(ledger.all())
  return {
    outageMs: Math.round(tReady - tKill),
    allActiveSeconds: allActive ? round2((tAll - tReady) / 1000) : Number.NaN,
    reactive: { p50Ms: reactive.p50Ms, p99Ms: reactive.p99Ms, maxMs: reactive.maxMs },
    notActive,
    relayCores: round2(relayCores),
    relayPeakCores: round2(peak),
    loadGenCores,
    shapedAuth,
    shapedSeen: fleet.causes['AUTH rate-limited (shaped)'] ?? 0,
    reconnects: fleet.reconnects() - reconnects0,
    publishedQueued: ledger.queued.size,
    notQueued,
    queuedLost,
    ackedLost,
    deliveries: delivered.deliveries,
    duplicates: delivered.duplicates,
    missing: delivered.missing,
    missed: delivered.missed.map((m) => {
      const [subscriber, id] = m.split(':') as [string, string]
      const t = fleet.agents[Number(subscriber)]!
      const how = ledger.queued.has(id) ? 'queued' : 'acked'
      return `agent ${subscriber} (ACTIVE again at +${Math.round(t.lastActiveAt - tReady)} ms) missed ${id.slice(0, 12)} (${how}, created_at ${ledger.createdAt.get(id)})`
    }),
    causes: fleet.causes,
  }
}
