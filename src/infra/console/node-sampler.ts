// What the process itself costs, measured over each status interval: the event loop's delay (p99), the
// garbage collections that paused it for GC_PAUSE_MS or more, CPU as a share of one core, and RSS. Each
// sample() closes one interval and opens the next.
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks'

/** A pause the console shows: shorter ones are routine young-generation collections. */
export const GC_PAUSE_MS = 10

export interface ProcessSample {
  loopDelayP99Ms: number
  gcPauses: { count: number; maxMs: number }
  rssBytes: number
  /** of one core (100 = one core busy) */
  cpuPercent: number
}

export interface ProcessSampler {
  sample(): ProcessSample
  stop(): void
}

/** `nowMs`: a monotonic clock (the CPU share is CPU time over elapsed time) */
export function startProcessSampler(nowMs: () => number = () => performance.now()): ProcessSampler {
  // 10 ms resolution, as the default metrics' loop monitor: finer costs timer wake-ups for nothing we show
  const loop = monitorEventLoopDelay({ resolution: 10 })
  loop.enable()
  let gcCount = 0
  let gcMaxMs = 0
  const gc = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if (entry.duration < GC_PAUSE_MS) continue
      gcCount++
      if (entry.duration > gcMaxMs) gcMaxMs = entry.duration
    }
  })
  gc.observe({ entryTypes: ['gc'] })
  let cpu = process.cpuUsage()
  let atMs = nowMs()

  return {
    sample() {
      const p99 = loop.percentile(99) / 1e6
      loop.reset()
      const now = nowMs()
      const used = process.cpuUsage(cpu)
      cpu = process.cpuUsage()
      const elapsedMs = Math.max(now - atMs, 1)
      atMs = now
      const sample: ProcessSample = {
        loopDelayP99Ms: Number.isFinite(p99) ? round(p99) : 0,
        gcPauses: { count: gcCount, maxMs: round(gcMaxMs) },
        rssBytes: process.memoryUsage.rss(),
        cpuPercent: round(((used.user + used.system) / 1000 / elapsedMs) * 100),
      }
      gcCount = 0
      gcMaxMs = 0
      return sample
    },
    stop() {
      loop.disable()
      gc.disconnect()
    },
  }
}

const round = (n: number) => Math.round(n * 10) / 10
