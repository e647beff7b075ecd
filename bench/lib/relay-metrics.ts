// Figures from a relay's Prometheus /metrics: a counter, and a histogram's quantile between two scrapes.

/** The relay's Prometheus /metrics text (a process-local registry: every figure starts at 0 on a restart). */
export async function scrapeMetrics(wsUrl: string): Promise<string> {
  return (await fetch(`${wsUrl.replace(/^ws/, 'http')}/metrics`)).text()
}

export function counterOf(metrics: string, name: string): number {
  const line = metrics.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`))
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0
}

/** A histogram's cumulative buckets, `le` in the metric's unit (+Inf last). */
export function histogramOf(metrics: string, name: string): { le: number; count: number }[] {
  const out: { le: number; count: number }[] = []
  for (const line of metrics.split('\n')) {
    const m = new RegExp(`^${name}_bucket\\{.*le="([^"]+)".*\\} (\\S+)$`).exec(line)
    if (m) out.push({ le: m[1] === '+Inf' ? Number.POSITIVE_INFINITY : Number(m[1]), count: Number(m[2]) })
  }
  return out
}

/**
 * The upper bound of the bucket holding quantile `q` of what was observed between two scrapes of one
 * histogram (NaN when nothing was): a bound, not an interpolation.
 */
export function bucketQuantile(before: { le: number; count: number }[], after: { le: number; count: number }[], q: number): number {
  const counts = after.map((b, i) => ({ le: b.le, count: b.count - (before[i]?.count ?? 0) }))
  const total = counts[counts.length - 1]?.count ?? 0
  if (total === 0) return Number.NaN
  return counts.find((b) => b.count >= q * total)?.le ?? Number.POSITIVE_INFINITY
}
