import { type IntervalHistogram, monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks'

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
 * Node's histogram records the whole interval between two of its timer's runs, the resolution included: an
 * idle loop reads p50 5.15 ms, p99 5.3 ms at a 5 ms resolution (measured on this machine, Node 20). Every
 * sample is the resolution plus the lateness, so each percentile minus the resolution is exactly the
 * lateness's percentile. Figures before 2026-12-02 carried the 5 ms (bench/README.md).
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
export function startGcPauses(): { stop(): GcPauses } {
  const pauses: number[] = []
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) pauses.push(entry.duration)
  })
  observer.observe({ entryTypes: ['gc'] })
  return {
    stop() {
      // entries buffered but not yet delivered arrive through takeRecords
      for (const entry of observer.takeRecords()) pauses.push(entry.duration)
      observer.disconnect()
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
