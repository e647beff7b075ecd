// `agents` (Apiary only): N real AgentClients from the built package over K load processes and one probe
// process, against one relay child (embedded SQLite, every client option at its default): the fleet starts in
// waves; in the steady phase the probe's handshakes are timed while the fleet heartbeats and trades jobs;
// then the relay is SIGKILLed and restarted on the same port and data directory under them (the storm), and
// again with `limits.maxConcurrentAuth` lowered so shaping is seen at work. Nothing published may be lost,
// missed or delivered twice. `--agents N` sets the fleet (default 3,000; quick 300), `--agent-shards K` the load
// processes (default 3), each connecting from a loopback address of its own.

import { openFilesNeeded, sourceAddress } from '../lib/agents/host-limits'
import { type AgentsOptions, type AgentsResult, agentsStorm } from '../lib/agents/phases'
import { MEAN_HEARTBEAT_MS } from '../lib/agents/shards'
import type { StormFigures } from '../lib/agents/storm'
import { round2, rowsOf } from '../lib/figures'
import { openFilesLimit } from '../lib/proc-readings'
import { type Context, defineScenario, type Figure, nothingToPrepare, type Outcome, type Report } from '../lib/scenario'

const SHAPED_MAX_CONCURRENT_AUTH = 32
/** the fleet the start-up waves and the recovery timeout below were set for */
const DEFAULT_AGENTS = 3_000
/** a fleet that does not come back within this was not going to: it bounds a failed storm of a large fleet */
const MAX_RECOVERY_TIMEOUT_MS = 600_000

function agentsOf(ctx: Context): number {
  const given = ctx.option('agents')
  if (given === undefined) return ctx.quick ? 300 : DEFAULT_AGENTS
  const n = Number(given)
  if (!Number.isInteger(n) || n < 1) throw new Error(`--agents: a positive whole number, not ${given}`)
  return n
}

function optionsOf(ctx: Context): Omit<AgentsOptions, 'dir'> {
  const quick = ctx.quick
  const agents = agentsOf(ctx)
  // a larger fleet starts in larger, denser waves, so start-up stays near a minute where the relay keeps up
  // (each shard awaits its part of a wave, so the rate offered never outruns the relay by more than a wave)
  const scale = Math.max(1, agents / DEFAULT_AGENTS)
  return {
    agents,
    shards: Number(ctx.option('agent-shards') ?? 3),
    waveSize: Math.round(50 * scale),
    waveSpacingMs: 20 / scale,
    probeHandshakes: quick ? 60 : 600,
    probeIntervalMs: 100,
    subscribers: quick ? 20 : 50,
    trafficPublishers: quick ? 5 : 10,
    trafficIntervalMs: 2_000,
    stormPublishers: quick ? 30 : 100,
    recoveryTimeoutMs: Math.min(MAX_RECOVERY_TIMEOUT_MS, 180_000 * scale),
    shapedMaxConcurrentAuth: SHAPED_MAX_CONCURRENT_AUTH,
  }
}

const worstLoop = (loads: { loopDelay: { p99Ms: number } }[]) => Math.max(...loads.map((l) => l.loopDelay.p99Ms))
const sumCores = (loads: { cores: number }[]) => loads.reduce((s, l) => s + l.cores, 0)

function fleetFigures(runs: Outcome<AgentsResult>[], agents: number): Figure[] {
  const up = rowsOf(runs, undefined, 'start-up in waves')
  const steady = rowsOf(runs, undefined, 'steady: probe handshakes under traffic')
  return [
    up('handshake start→ACTIVE p99, all waves', 'ms', (r) => r.handshake.waves.startToActive.p99Ms),
    up('handshake start→ACTIVE p99, second half', 'ms', (r) => r.handshake.wavesSecondHalf.startToActive.p99Ms),
    up('relay rss per agent', 'KiB', (r) => r.memory.rssPerAgent / 1024),
    up('relay heap+external per agent', 'KiB', (r) => r.memory.heapPerAgent / 1024),
    up('load processes: worst loop delay p99', 'ms', (r) => worstLoop(r.shardLoad.startup)),
    up('load processes: CPU', 'cores', (r) => sumCores(r.shardLoad.startup)),
    steady('steady handshake start→ACTIVE p50', 'ms', (r) => r.handshake.steady.startToActive.p50Ms),
    steady('steady handshake start→ACTIVE p99', 'ms', (r) => r.handshake.steady.startToActive.p99Ms),
    steady('socket→ACTIVE p99', 'ms', (r) => r.handshake.steady.socketToActive.p99Ms),
    steady('of which socket + AUTH p99', 'ms', (r) => r.handshake.steady.auth.p99Ms),
    steady('of which registration p99', 'ms', (r) => r.handshake.steady.register.p99Ms),
    steady('relay-side open→AUTH OK p50 (bucket bound)', 'ms', (r) => r.handshake.relaySideP50Ms),
    steady('relay-side open→AUTH OK p99 (bucket bound)', 'ms', (r) => r.handshake.relaySideP99Ms),
    steady('probe process loop delay p99', 'ms', (r) => r.probeLoad.loopDelay.p99Ms),
    steady('probe process CPU', 'cores', (r) => r.probeLoad.cores),
    steady('load processes: worst loop delay p99', 'ms', (r) => worstLoop(r.shardLoad.steady)),
    steady('relay loop delay p99', 'ms', (r) => r.relayLoopDelay.p99Ms),
    steady('relay loop delay max', 'ms', (r) => r.relayLoopDelay.maxMs),
    steady('relay GC pauses ≥ 10 ms', 'count', (r) => r.relayLoopDelay.gc?.over10Ms ?? 0),
    steady('relay GC pause max', 'ms', (r) => r.relayLoopDelay.gc?.maxMs ?? 0),
    steady('relay CPU', 'cores', (r) => r.steady.relayCores),
    steady('relay CPU per agent', 'µs/s', (r) => (r.steady.relayCores * 1e6) / agents),
    steady('relay CPU per agent heartbeat', 'µs', (r) => r.steady.relayCpuPerHeartbeatUs),
    steady('agent heartbeats (from the schedule)', 'count', (r) => r.steady.heartbeats),
    steady('relay RSS', 'MiB', (r) => r.steady.relayRssMaxBytes / 2 ** 20),
    steady('load-generator CPU', 'cores', (r) => r.steady.loadGenCores),
    steady('traffic deliveries', 'count', (r) => r.traffic.deliveries),
    steady('traffic duplicates delivered', 'count', (r) => r.traffic.duplicates),
    steady('traffic deliveries missing', 'count', (r) => r.traffic.missing),
    steady('agents not ACTIVE at the end', 'count', (r) => agents - r.active),
  ]
}

/** a storm's figures and notes (a run without that storm gives NaN cells) */
function stormReport(runs: Outcome<AgentsResult>[], group: string, get: (r: AgentsResult) => StormFigures | undefined): Report {
  const row = rowsOf(runs, undefined, group)
  const of = (f: (s: StormFigures) => number) => (r: AgentsResult) => {
    const s = get(r)
    return s ? f(s) : Number.NaN
  }
  const figures = [
    row(
      'outage (kill → listening again)',
      's',
      of((s) => s.outageMs / 1000),
    ),
    row(
      'restart → all ACTIVE',
      's',
      of((s) => s.allActiveSeconds),
    ),
    row(
      'restart → agent ACTIVE p50',
      's',
      of((s) => s.reactive.p50Ms / 1000),
    ),
    row(
      'relay CPU (mean)',
      'cores',
      of((s) => s.relayCores),
    ),
    row(
      'relay CPU (busiest second)',
      'cores',
      of((s) => s.relayPeakCores),
    ),
    row(
      'load-generator CPU',
      'cores',
      of((s) => s.loadGenCores),
    ),
    row(
      'load processes: worst loop delay p99',
      'ms',
      of((s) => worstLoop(s.shardLoad)),
    ),
    row(
      'AUTHs shaped (relay /metrics)',
      'count',
      of((s) => s.shapedAuth),
    ),
    row(
      'shaped refusals seen by agents',
      'count',
      of((s) => s.shapedSeen),
    ),
    row(
      'reconnect attempts',
      'count',
      of((s) => s.reconnects),
    ),
    row(
      'publishes resolved queued',
      'count',
      of((s) => s.publishedQueued),
    ),
    row(
      'queued publishes lost',
      'count',
      of((s) => s.queuedLost),
    ),
    row(
      'deliveries (traffic + outage jobs)',
      'count',
      of((s) => s.deliveries),
    ),
    row(
      'duplicates delivered',
      'count',
      of((s) => s.duplicates),
    ),
    row(
      'deliveries missing',
      'count',
      of((s) => s.missing),
    ),
  ]
  const notes: string[] = []
  runs.forEach((r, i) => {
    const s = r.ok ? get(r.value) : undefined
    if (!s) return
    const causes = Object.entries(s.causes).map(([k, n]) => `${k}=${n}`)
    notes.push(`agents r${i + 1} ${group}: failed attempts by cause: ${causes.join(', ') || 'none'}`)
    if (s.notQueued) notes.push(`agents r${i + 1} ${group}: ${s.notQueued} outage publishes did not resolve queued: true`)
    if (s.ackedLost) notes.push(`agents r${i + 1} ${group}: ${s.ackedLost} acknowledged publishes not stored`)
    if (s.missed.length) notes.push(`agents r${i + 1} ${group}: ${s.missing} deliveries missing, e.g. ${s.missed.join('; ')}`)
    if (s.notActive) notes.push(`agents r${i + 1} ${group}: ${s.notActive} agents not ACTIVE after the recovery timeout`)
  })
  return { figures, notes }
}

export const scenario = defineScenario({
  name: 'agents',
  describe: 'AgentClients over several load processes: start-up, steady handshakes, a relay killed under them',
  needs: [],
  sides: () => ['apiary'] as const,
  prepare: nothingToPrepare,
  measure: (_side, _round, _prepared, ctx) => agentsStorm({ ...optionsOf(ctx), dir: ctx.freshDir('apiary-agents') }),
  report: (results, _prepared, ctx) => {
    const o = optionsOf(ctx)
    const storms = [
      stormReport(results.apiary, 'storm', (r) => r.storm),
      stormReport(results.apiary, `storm, maxConcurrentAuth ${SHAPED_MAX_CONCURRENT_AUTH}`, (r) => r.shapedStorm),
    ]
    const setup = `agents: ${o.agents} agents over ${o.shards} load processes from ${sourceAddress(0)}–${sourceAddress(o.shards - 1)} (open-files limit ${openFilesLimit()}, the relay needs ${openFilesNeeded(o)}), started in waves of ${o.waveSize}, one start every ${round2(o.waveSpacingMs)} ms; a probe from ${sourceAddress(o.shards)} doing ${o.probeHandshakes} handshakes, one every ${o.probeIntervalMs} ms; ${o.subscribers} subscribers, a job every ${o.trafficIntervalMs} ms; ${o.stormPublishers} publish during each outage; recovery timeout ${o.recoveryTimeoutMs / 1000} s`
    const perHeartbeat = `agents: relay CPU per agent heartbeat = relay CPU (every thread, /proc) over the steady window ÷ the heartbeats the fleet sent in it by the client's schedule (one every ${MEAN_HEARTBEAT_MS / 1000} s on average); the window also holds the probe's handshakes and the jobs, so it is an upper bound; relay RSS is the largest VmRSS of a sample a second over the window`
    return {
      figures: [...fleetFigures(results.apiary, o.agents), ...storms.flatMap((s) => s.figures)],
      notes: [setup, perHeartbeat, ...storms.flatMap((s) => s.notes)],
    }
  },
})
