// `agents` (Apiary only): N real AgentClients from the built package over K load processes and one probe
// process, against one relay child (embedded SQLite, every client option at its default): the fleet starts in
// waves; in the steady phase the probe's handshakes are timed while the fleet heartbeats and trades jobs;
// then the relay is SIGKILLed and restarted on the same port and data directory under them (the storm), and
// again with `limits.maxConcurrentAuth` lowered so shaping is seen at work. Nothing published may be lost,
// missed or delivered twice. `--agent-shards K` sets the load processes (default 3).
import { type AgentsOptions, type AgentsResult, agentsStorm } from '../lib/agents/phases'
import type { StormFigures } from '../lib/agents/storm'
import { rowsOf } from '../lib/figures'
import { openFilesLimit } from '../lib/proc-readings'
import { type Context, defineScenario, type Figure, nothingToPrepare, type Outcome, type Report } from '../lib/scenario'

const SHAPED_MAX_CONCURRENT_AUTH = 32

function optionsOf(ctx: Context): Omit<AgentsOptions, 'dir'> {
  const quick = ctx.quick
  return {
    agents: quick ? 300 : 3_000,
    shards: Number(ctx.option('agent-shards') ?? 3),
    waveSize: 50,
    waveSpacingMs: 20,
    probeHandshakes: quick ? 60 : 600,
    probeIntervalMs: 100,
    subscribers: quick ? 20 : 50,
    trafficPublishers: quick ? 5 : 10,
    trafficIntervalMs: 2_000,
    stormPublishers: quick ? 30 : 100,
    recoveryTimeoutMs: 180_000,
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
    const setup = `agents: ${o.agents} agents over ${o.shards} load processes (open-files limit ${openFilesLimit()}) and a probe doing ${o.probeHandshakes} handshakes, one every ${o.probeIntervalMs} ms; ${o.subscribers} subscribers, a job every ${o.trafficIntervalMs} ms; ${o.stormPublishers} publish during each outage`
    return {
      figures: [...fleetFigures(results.apiary, o.agents), ...storms.flatMap((s) => s.figures)],
      notes: [setup, ...storms.flatMap((s) => s.notes)],
    }
  },
})
