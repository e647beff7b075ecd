// `mesh` (Apiary only): the relay mesh on three `apiary start` processes (the built package, as an operator
// runs it) sharing Redis and one fresh PostgreSQL database, default lease: how long three fresh nodes take to
// link; put-users forwarded over the tunnel to the channel's owner vs sent to the owner's node; how long a
// channel has no owner after its owner's SIGTERM (hand-over) and kill -9 (takeover); then the tunnel alone
// (1 MiB requests) and this process's memory while it sends to a peer that stopped reading.
import { join } from 'node:path'
import { cell, median, rowsOf } from '../lib/figures'
import { BENCH_DATA_DIR } from '../lib/fixtures'
import type { Latency } from '../lib/load/latency'
import { type MeshFigures, type MeshOptions, meshBench, type TrialFigures } from '../lib/mesh/mesh-bench'
import { type Context, defineScenario, type Figure, type Outcome } from '../lib/scenario'

const optionsOf = (ctx: Context): Omit<MeshOptions, 'dir' | 'logDir'> =>
  ctx.quick
    ? { killTrials: 3, termTrials: 3, moderationEvents: 50, convergenceRuns: 1, tunnelRequests: 100, stallSeconds: 3 }
    : { killTrials: 20, termTrials: 20, moderationEvents: 200, convergenceRuns: 3, tunnelRequests: 500, stallSeconds: 10 }

const s = (ms: number) => ms / 1000
const mib = (bytes: number) => bytes / 2 ** 20

function clusterFigures(runs: Outcome<MeshFigures>[], o: ReturnType<typeof optionsOf>): Figure[] {
  const row = rowsOf(runs, undefined, 'three nodes, lease 6 s renewed every 2 s')
  // one run gives both columns: Apiary = forwarded to the owner, baseline = sent to the owner's node
  const moderation = (figure: string, get: (l: Latency) => number): Figure => ({
    group: `put-user OK, forwarded vs at the owner (${o.moderationEvents} each)`,
    figure,
    unit: 'ms',
    apiary: cell(runs, (r) => get(r.moderation.forwarded)),
    baseline: cell(runs, (r) => get(r.moderation.local)),
  })
  return [
    row('takeover after kill -9 p50', 's', (r) => s(r.takeover.latency.p50Ms)),
    row('takeover after kill -9 p99', 's', (r) => s(r.takeover.latency.p99Ms)),
    row('kill -9 trials without a takeover', 'count', (r) => r.takeover.failures.length),
    row('hand-over on SIGTERM p50', 's', (r) => s(r.handover.latency.p50Ms)),
    row('hand-over on SIGTERM p99', 's', (r) => s(r.handover.latency.p99Ms)),
    row('SIGTERM trials without a hand-over', 'count', (r) => r.handover.failures.length),
    row('SIGTERM → process exited (drain) p50', 's', (r) => s(r.handover.exit.p50Ms)),
    row('gossip convergence: spawn → all linked', 's', (r) => s(median(r.convergence.startToLinkedMs))),
    row('gossip convergence: all listening → all linked', 's', (r) => s(median(r.convergence.listeningToLinkedMs))),
    row('a replacement node: spawn → all linked p50', 's', (r) => s(r.takeover.relink.p50Ms)),
    moderation('p50', (l) => l.p50Ms),
    moderation('p99', (l) => l.p99Ms),
  ]
}

function tunnelFigures(runs: Outcome<MeshFigures>[], o: ReturnType<typeof optionsOf>): Figure[] {
  const t = rowsOf(runs, undefined, `tunnel, ${o.tunnelRequests} requests of 1 MiB, 8 in flight`)
  const st = rowsOf(runs, undefined, `tunnel to a SIGSTOPped peer, 1 MiB requests for ${o.stallSeconds} s`)
  return [
    t('throughput', 'MiB/s', (r) => r.tunnel.mibPerSec),
    t('process CPU (both ends) per MiB', 'ms', (r) => (r.tunnel.cores * 1000) / r.tunnel.mibPerSec),
    t('request → 1-byte answer p50', 'ms', (r) => r.tunnel.requestLatency.p50Ms),
    t('request → 1-byte answer p99', 'ms', (r) => r.tunnel.requestLatency.p99Ms),
    st('rss at start (after a forced GC)', 'MiB', (r) => mib(r.stalled.start.rss)),
    st('rss max', 'MiB', (r) => mib(r.stalled.max.rss)),
    st('heapUsed max', 'MiB', (r) => mib(r.stalled.max.heapUsed)),
    st('external (Buffers) max', 'MiB', (r) => mib(r.stalled.max.external)),
    st('socket send buffer max', 'MiB', (r) => mib(r.stalled.max.bufferedAmount)),
    st('queued for credit max', 'MiB', (r) => mib(r.stalled.max.queuedBytes)),
    st('requests attempted', 'count', (r) => r.stalled.attempts),
    st('requests taken (in flight)', 'count', (r) => r.stalled.accepted),
    st('BUSY refusals', 'count', (r) => r.stalled.busy),
    st('taken requests answered after SIGCONT', 'count', (r) => r.stalled.answeredAfterResume),
  ]
}

function trialNotes(round: number, t: TrialFigures): string[] {
  const notes = t.failures.map((f) => `mesh r${round} ${t.signal}: ${f}`)
  const refused: Record<string, number> = {}
  for (const x of t.trials) for (const [k, n] of Object.entries(x.refusals)) refused[k] = (refused[k] ?? 0) + n
  const refusals = Object.entries(refused).map(([k, n]) => `${k}=${n}`)
  if (refusals.length) notes.push(`mesh r${round} ${t.signal}: OK false after the signal: ${refusals.join(' ')}`)
  const notRaised = t.trials.filter((x) => !(x.generationAfter > x.generationBefore)).length
  if (notRaised) notes.push(`mesh r${round} ${t.signal}: ${notRaised} trial(s) where the witness saw no higher generation afterwards`)
  notes.push(`mesh r${round} ${t.signal} per trial (s): ${t.trials.map((x) => (x.ms / 1000).toFixed(2)).join(' ')}`)
  return notes
}

function meshNotes(runs: Outcome<MeshFigures>[]): string[] {
  return runs.flatMap((r, i) => {
    if (!r.ok) return []
    const v = r.value
    const notes = [...trialNotes(i + 1, v.takeover), ...trialNotes(i + 1, v.handover)]
    if (Object.keys(v.moderation.refusals).length)
      notes.push(`mesh r${i + 1} moderation: OK false ${JSON.stringify(v.moderation.refusals)}`)
    const failed = Object.entries(v.stalled.failedAfterResume).map(([k, n]) => `${k}=${n}`)
    if (failed.length) notes.push(`mesh r${i + 1} stalled peer: taken requests that failed after SIGCONT: ${failed.join(' ')}`)
    return notes
  })
}

export const scenario = defineScenario({
  name: 'mesh',
  describe: 'the relay mesh on three `apiary start` processes: linking, forwarding, hand-over, takeover, the tunnel',
  needs: ['redis', 'postgres'],
  sides: () => ['apiary'] as const,
  prepare: async () => new Date().toISOString().replace(/[:.]/g, '-'),
  measure: (_side, round, startedAt, ctx) =>
    meshBench({ ...optionsOf(ctx), dir: ctx.freshDir, logDir: join(BENCH_DATA_DIR, 'mesh-logs', `${startedAt}-r${round + 1}`) }),
  report: (results, _prepared, ctx) => ({
    figures: [...clusterFigures(results.apiary, optionsOf(ctx)), ...tunnelFigures(results.apiary, optionsOf(ctx))],
    notes: [`mesh: each node's log (warn and above) is in ${join(BENCH_DATA_DIR, 'mesh-logs')}`, ...meshNotes(results.apiary)],
  }),
})
