// Ingest of the default corpus (bench/lib/corpus.ts) as a user would load a relay, in one shape (connections,
// window or open-loop rate, optionally the relay pinned to one core and the load generator to the other).
// Besides the rate and the OK latency it reads, from /proc over exactly the timed window, the relay's CPU per
// accepted event (every thread: event loop, verifier pool, SQLite writer) and the event loop's share of it.
import { existsSync } from 'node:fs'
import { knobs } from '../knobs'
import { corpusEvents } from './corpus'
import { cpuByRole, MAIN_PARTS, type MainPart, mainThreadShares, ROLES, type Role } from './cpu-parts'
import { outcomeNotes, relayRowsOf, rowsOf } from './figures'
import type { BenchEvent } from './fixtures'
import { type IngestResult, ingestPipelined } from './load/ingest'
import type { LoopDelay } from './loop-delay'
import { allCpus, pinToCpus, relayCpu, threadCpu } from './proc-readings'
import { type RelayName, type RelayProcess, withRelay } from './relay-process'
import type { Context, Figure, Outcome, Report } from './scenario'

export interface CorpusShape {
  connections: number
  /** events in flight per connection (1 = closed loop) */
  window: number
  /** relay on CPU 0 and this load generator on CPU 1 */
  pinned?: boolean
  /** open loop at this rate instead of a window (events/s) */
  ratePerSec?: number
}

export type CorpusIngestResult = IngestResult & {
  loopDelay: LoopDelay
  relayCores: number
  /** relay CPU (all threads) per accepted event, µs */
  cpuPerEventUs: number
  /** the event-loop thread's part of the relay's CPU, 0..1 */
  mainThreadShare: number
  /** CPU per accepted event of each relay thread that used any, µs, busiest first ("name/tid") */
  threadsUs: Record<string, number>
  /** CPU per accepted event by thread role, µs */
  byRole: Record<Role, number>
  /** Apiary's event loop per accepted event by part of the write path, µs (with BENCH_CPU_PROFILE only) */
  mainParts?: Record<MainPart, number>
}

export async function corpusIngest(
  relay: RelayProcess,
  events: BenchEvent[],
  shape: CorpusShape,
  maxSeconds: number,
): Promise<CorpusIngestResult> {
  const cpu = relayCpu(relay.pid)
  let total0 = 0
  let t0 = 0
  let threads0 = new Map<number, { name: string; seconds: number }>()
  let threads1 = threads0
  const figures = { relayCores: Number.NaN, cpuS: Number.NaN, loopDelay: undefined as LoopDelay | undefined }
  if (shape.pinned) {
    pinToCpus(relay.pid, '0')
    pinToCpus(process.pid, '1')
  }
  try {
    const r = await ingestPipelined(relay.url, {
      events,
      connections: shape.connections,
      window: shape.window,
      maxSeconds,
      ...(shape.ratePerSec ? { ratePerSec: shape.ratePerSec } : {}),
      onStart: async () => {
        await relay.spanStart()
        total0 = cpu.seconds()
        threads0 = threadCpu(relay.pid)
        t0 = performance.now()
      },
      onEnd: async () => {
        figures.cpuS = cpu.seconds() - total0
        threads1 = threadCpu(relay.pid)
        figures.relayCores = Math.round((figures.cpuS / ((performance.now() - t0) / 1000)) * 100) / 100
        figures.loopDelay = await relay.spanStop()
      },
    })
    // the event loop runs on the process's first thread, whose id is the pid
    const mainS = (threads1.get(relay.pid)?.seconds ?? Number.NaN) - (threads0.get(relay.pid)?.seconds ?? Number.NaN)
    const used = new Map([...threads1].map(([tid, t]) => [tid, { name: t.name, seconds: t.seconds - (threads0.get(tid)?.seconds ?? 0) }]))
    const mainParts = mainThreadParts(relay, (mainS * 1e6) / Math.max(1, r.accepted))
    return {
      ...r,
      loopDelay: figures.loopDelay!,
      relayCores: figures.relayCores,
      cpuPerEventUs: r.accepted > 0 ? Math.round((figures.cpuS * 1e6) / r.accepted) : Number.NaN,
      mainThreadShare: figures.cpuS > 0 ? Math.round((mainS / figures.cpuS) * 100) / 100 : Number.NaN,
      threadsUs: perThread(threads0, threads1, r.accepted),
      byRole: cpuByRole(relay.name, relay.pid, used, r.accepted),
      ...(mainParts ? { mainParts } : {}),
    }
  } finally {
    if (shape.pinned) pinToCpus(process.pid, allCpus())
  }
}

/** The event loop's µs per event split by its CPU profile's shares, where the span was profiled (Apiary). */
function mainThreadParts(relay: RelayProcess, mainUsPerEvent: number): Record<MainPart, number> | undefined {
  if (relay.name !== 'apiary') return undefined
  const file = knobs.cpuProfileDir && `${knobs.cpuProfileDir}/cpu-${relay.pid}.cpuprofile`
  if (!file || !existsSync(file)) return undefined
  const shares = mainThreadShares(file)
  return Object.fromEntries(MAIN_PARTS.map((p) => [p, Math.round(shares[p] * mainUsPerEvent)])) as Record<MainPart, number>
}

function perThread(
  before: Map<number, { name: string; seconds: number }>,
  after: Map<number, { name: string; seconds: number }>,
  accepted: number,
): Record<string, number> {
  const used = [...after]
    .map(([tid, t]) => ({ key: `${t.name}/${tid}`, s: t.seconds - (before.get(tid)?.seconds ?? 0) }))
    .filter((t) => t.s > 0)
  return Object.fromEntries(
    used.sort((a, b) => b.s - a.s).map((t) => [t.key, accepted > 0 ? Math.round((t.s * 1e6) / accepted) : Number.NaN]),
  )
}

/** Corpus events and how long a slow relay is fed, full or quick. */
export const corpusSize = (quick: boolean) => (quick ? { events: 4_000, maxSeconds: 8 } : { events: 30_000, maxSeconds: 15 })

/** Signs (or loads the cached) corpus before any clock starts. */
export const prepareCorpus = async (ctx: Context) => corpusEvents(corpusSize(ctx.quick).events)

/** One run of `shape` on a fresh relay; `config`: Apiary's settings for this run. */
export function corpusRun(
  name: RelayName,
  events: BenchEvent[],
  shape: CorpusShape,
  ctx: Context,
  config: Record<string, unknown> = {},
): Promise<CorpusIngestResult> {
  return withRelay(name, ctx.freshDir(name), (relay) => corpusIngest(relay, events, shape, corpusSize(ctx.quick).maxSeconds), config)
}

/**
 * The figures of one shape, Apiary beside the baseline (or whatever the two columns compare); a comparison of
 * relays passes strfry's outcomes too (none where it did not run: its cells read 'skipped').
 */
export function corpusFigures(
  scenario: string,
  group: string,
  apiary?: Outcome<CorpusIngestResult>[],
  baseline?: Outcome<CorpusIngestResult>[],
  strfry?: Outcome<CorpusIngestResult>[],
): Report {
  const row = strfry ? relayRowsOf({ apiary, baseline, strfry }, group) : rowsOf(apiary, baseline, group)
  const figures: Figure[] = [
    row('accepted', 'ev/s', (r) => r.eventsPerSec),
    row('relay CPU per accepted event', 'µs', (r) => r.cpuPerEventUs),
    row("event loop's share of relay CPU", 'share', (r) => r.mainThreadShare),
    row('relay CPU', 'cores', (r) => r.relayCores),
    row('OK latency p50', 'ms', (r) => r.okLatency.p50Ms),
    row('OK latency p99', 'ms', (r) => r.okLatency.p99Ms),
    row('event-loop delay p99', 'ms', (r) => r.loopDelay.p99Ms),
    row('load-generator CPU', 'cores', (r) => r.loadGenCores),
    ...ROLES.map((role) => row(`CPU per event: ${role}`, 'µs', (r) => r.byRole[role])),
    ...(apiary?.some((o) => o.ok && o.value.mainParts)
      ? MAIN_PARTS.map((part) => row(`event loop per event: ${part}`, 'µs', (r) => r.mainParts?.[part] ?? Number.NaN))
      : []),
  ]
  return {
    figures,
    notes: [
      ...outcomeNotes(`${scenario} ${group}, apiary`, apiary),
      ...outcomeNotes(`${scenario} ${group}, baseline`, baseline),
      ...outcomeNotes(`${scenario} ${group}, strfry`, strfry),
    ],
  }
}
