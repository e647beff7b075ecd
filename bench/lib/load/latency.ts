// Latency percentiles, rates and this process's CPU, as every load generator reports them.

export interface Latency {
  p50Ms: number
  p99Ms: number
  maxMs: number
}

/**
 * p50, p99 and max of the first `n` samples. A quantile is the nearest rank: the smallest sample with at least
 * q·n samples at or below it (of 300, the p99 is the 297th, the 4th largest).
 */
export function latency(samples: ArrayLike<number>, n = samples.length): Latency {
  if (n === 0) return { p50Ms: Number.NaN, p99Ms: Number.NaN, maxMs: Number.NaN }
  const sorted = Float64Array.from({ length: n }, (_, i) => samples[i]!).sort()
  const at = (q: number) => round2(sorted[Math.min(n - 1, Math.max(0, Math.ceil(q * n - 1e-9) - 1))]!)
  return { p50Ms: at(0.5), p99Ms: at(0.99), maxMs: round2(sorted[n - 1]!) }
}

export const round2 = (x: number) => Math.round(x * 100) / 100

/** CPU this process used since `since` (a process.cpuUsage() reading taken at wall time `t0`), in cores */
export function cores(since: NodeJS.CpuUsage, t0: number): number {
  const d = process.cpuUsage(since)
  return round2((d.user + d.system) / 1000 / Math.max(1, performance.now() - t0))
}
export const perSecond = (count: number, ms: number) => (ms > 0 ? Math.round((count * 1000) / ms) : 0)
