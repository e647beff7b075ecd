// Event-loop delay and GC pauses over a measured span, in whichever process measures itself (a relay child, an
// agents load process), and, with BENCH_TIMELINE, their wall-clock timeline.
import { writeFileSync } from 'node:fs'
import { type IntervalHistogram, monitorEventLoopDelay, type PerformanceEntry, PerformanceObserver } from 'node:perf_hooks'
import { knobs } from '../knobs'

/** Event-loop delay over a measured span, in ms: how late the loop ran a timer that was due. */
export interface LoopDelay {
  p50Ms: number
  p99Ms: number
  maxMs: number
  meanMs: number
  /** the main thread's garbage-collection pauses over the same window (when measured by the relay child) */
  gc?: GcPauses
}

export interface GcPauses {
  count: number
  /** pauses of 10 ms or more: each one can be a handshake's or a REQ's whole latency budget */
  over10Ms: number
  maxMs: number
  totalMs: number
}

/** One timer every RESOLUTION_MS; finer costs the measured loop more, coarser misses short stalls. */
const RESOLUTION_MS = 5

export function startLoopDelay(): IntervalHistogram {
  const h = monitorEventLoopDelay({ resolution: RESOLUTION_MS })
  h.enable()
  return h
}

/**
 * Node's histogram records the whole interval between two of its timer's runs, the resolution included: every
 * sample is the resolution plus the lateness, so each percentile minus the resolution is the lateness's.
 */
export function stopLoopDelay(h: IntervalHistogram): LoopDelay {
  h.disable()
  const late = (ns: number) => Math.max(0, Math.round((ns / 1e6 - RESOLUTION_MS) * 100) / 100)
  return { p50Ms: late(h.percentile(50)), p99Ms: late(h.percentile(99)), maxMs: late(h.max), meanMs: late(h.mean) }
}

/**
 * The main thread's GC pauses from now until `stop()` (Node's `gc` performance entries: one per scavenge,
 * mark-compact or incremental step that paused JavaScript), so a loop-delay tail can be told apart from a
 * collector's pause without a --trace-gc run, which slows the relay itself.
 */
export function startGcPauses(timelineName = 'gc'): { stop(): GcPauses } {
  const pauses: number[] = []
  // with BENCH_TIMELINE, every pause with its wall-clock start, to lay beside a probe's handshakes
  const timeline: [startEpochMs: number, durationMs: number, kind: number][] = []
  const take = (entries: PerformanceEntry[]) => {
    for (const entry of entries) {
      pauses.push(entry.duration)
      const kind = (entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind ?? 0
      if (knobs.timelineDir) timeline.push([performance.timeOrigin + entry.startTime, entry.duration, kind])
    }
  }
  const observer = new PerformanceObserver((list) => take(list.getEntries()))
  observer.observe({ entryTypes: ['gc'] })
  return {
    stop() {
      // entries buffered but not yet delivered arrive through takeRecords
      take(observer.takeRecords())
      observer.disconnect()
      writeTimeline(timelineName, timeline)
      const round = (ms: number) => Math.round(ms * 100) / 100
      return {
        count: pauses.length,
        over10Ms: pauses.filter((ms) => ms >= 10).length,
        maxMs: round(Math.max(0, ...pauses)),
        totalMs: round(pauses.reduce((a, b) => a + b, 0)),
      }
    },
  }
}

/** With BENCH_TIMELINE: `rows` as JSON in <dir>/<what>-<pid>-<epoch ms>.json (for a person; nothing reads it back). */
export function writeTimeline(what: string, rows: unknown[]): void {
  const dir = knobs.timelineDir
  if (dir) writeFileSync(`${dir}/${what}-${process.pid}-${Date.now()}.json`, JSON.stringify(rows))
}

/**
 * With BENCH_TIMELINE: the event loop's stalls with their wall-clock time (a 5 ms timer that ran ≥ 2 ms late),
 * written by `stop()`; a no-op without it.
 */
export function startStallTimeline(name: string): { stop(): void } {
  if (!knobs.timelineDir) return { stop() {} }
  const stalls: [startEpochMs: number, lateMs: number][] = []
  let due = performance.now() + RESOLUTION_MS
  const timer = setInterval(() => {
    const now = performance.now()
    if (now - due >= 2) stalls.push([performance.timeOrigin + due, now - due])
    due = now + RESOLUTION_MS
  }, RESOLUTION_MS)
  return {
    stop() {
      clearInterval(timer)
      writeTimeline(name, stalls)
    },
  }
}
