// Ingest of the default corpus (bench/corpus.ts) as a user would load a relay (issue 13): 4 connections × 16
// in flight, 16 connections closed-loop, 4 × 200, each relay on both cores or pinned to one (the load generator
// then pinned to the other), and an open-loop run at half the rate a relay reached. Besides the rate and the
// OK latency it reads, from /proc over exactly the timed window, the relay's CPU per accepted event (every
// thread: event loop, verifier pool, SQLite writer) and the event loop's share of it.
import type { RelayProcess } from './child'
import type { BenchEvent } from './fixtures'
import { type IngestResult, ingestPipelined } from './load'
import type { LoopDelay } from './loop-delay'
import { allCpus, pinToCpus, relayCpu, threadCpu } from './relay-readings'

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
        await relay.loopDelayStart()
        total0 = cpu.seconds()
        threads0 = threadCpu(relay.pid)
        t0 = performance.now()
      },
      onEnd: async () => {
        figures.cpuS = cpu.seconds() - total0
        threads1 = threadCpu(relay.pid)
        figures.relayCores = Math.round((figures.cpuS / ((performance.now() - t0) / 1000)) * 100) / 100
        figures.loopDelay = await relay.loopDelayStop()
      },
    })
    // the event loop runs on the process's first thread, whose id is the pid
    const mainS = (threads1.get(relay.pid)?.seconds ?? Number.NaN) - (threads0.get(relay.pid)?.seconds ?? Number.NaN)
    return {
      ...r,
      loopDelay: figures.loopDelay!,
      relayCores: figures.relayCores,
      cpuPerEventUs: r.accepted > 0 ? Math.round((figures.cpuS * 1e6) / r.accepted) : Number.NaN,
      mainThreadShare: figures.cpuS > 0 ? Math.round((mainS / figures.cpuS) * 100) / 100 : Number.NaN,
      threadsUs: perThread(threads0, threads1, r.accepted),
    }
  } finally {
    if (shape.pinned) pinToCpus(process.pid, allCpus())
  }
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
