// Reading a relay's Prometheus /metrics the way an operator's scraper does: a sample's value summed over its
// label sets, or for one set of labels.
import { type HttpTarget, httpGet } from './http'

/** The value of one Prometheus sample (sum over label sets), 0 when absent. */
export async function metric(r: HttpTarget, name: string): Promise<number> {
  const { body } = await httpGet(r, '/metrics')
  let sum = 0
  for (const line of body.split('\n')) {
    if (line.startsWith('#')) continue
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line)
    if (m && m[1] === name) sum += Number(m[3])
  }
  return sum
}

/** One Prometheus sample with exactly these labels among its own, 0 when absent. */
export async function labelledMetric(r: HttpTarget, name: string, labels: Record<string, string>): Promise<number> {
  const { body } = await httpGet(r, '/metrics')
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`)
  let sum = 0
  for (const line of body.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})?\s+(\S+)/.exec(line)
    if (!m || m[1] !== name) continue
    const have = (m[2] ?? '').split(',')
    if (wanted.every((w) => have.includes(w))) sum += Number(m[3])
  }
  return sum
}
