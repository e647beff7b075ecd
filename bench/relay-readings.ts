// What bench/agents.ts reads outside the agents: a port for the relay to keep across its restart, whether the
// killed process is gone, its CPU from /proc (no IPC to a relay busy with a storm), a counter from its
// /metrics, which ids it stored, and this process's open-files limit.
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import os from 'node:os'
import { connect } from './load'

/** A port free now, for the relay to listen on across its restart. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number }
      s.close(() => resolve(port))
    })
  })
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

let ticks: number | undefined
/** clock ticks per second of /proc's CPU times (getconf CLK_TCK; 100 when it cannot be asked) */
function ticksPerSecond(): number {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100
    } catch {
      ticks = 100
    }
  }
  return ticks
}

/** user + system CPU seconds from a /proc stat file (a process's, or one thread's under task/) */
function statSeconds(file: string): number {
  // the fields after "(comm)": state is [0], utime [11], stime [12]
  const stat = readFileSync(file, 'utf8')
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(f[11]) + Number(f[12])) / ticksPerSecond()
}

/** CPU seconds (user + system, every thread) of a process from /proc/<pid>/stat: no IPC to a busy relay. */
export function relayCpu(pid: number): { seconds: () => number } {
  return { seconds: () => statSeconds(`/proc/${pid}/stat`) }
}

/** CPU seconds of each live thread of `pid` by thread id (the event loop's is `pid`), with its name. */
export function threadCpu(pid: number): Map<number, { name: string; seconds: number }> {
  const out = new Map<number, { name: string; seconds: number }>()
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      out.set(Number(tid), {
        name: readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim(),
        seconds: statSeconds(`/proc/${pid}/task/${tid}/stat`),
      })
    } catch {} // the thread ended between the listing and the read
  }
  return out
}

/** Binds every thread of `pid` (and the threads it starts later) to the listed CPUs, e.g. "0" or "0,1". */
export function pinToCpus(pid: number, cpus: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' })
}

/** The CPUs this machine has, as taskset writes them ("0-1"): what a pinned process is given back. */
export function allCpus(): string {
  return `0-${os.cpus().length - 1}`
}

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

/** The ids of `ids` the relay has stored, asked by id: 500 per filter (maxLimit), with `limit` set, as a filter
 * without one gets the relay's defaultLimit (100). */
export async function storedIds(url: string, ids: string[]): Promise<Set<string>> {
  const ws = await connect(url)
  const found = new Set<string>()
  try {
    for (let i = 0; i < ids.length; i += 500) {
      const subId = `ids-${i}`
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no EOSE for the ids query within 10 s')), 10_000)
        const onMessage = (data: unknown) => {
          const msg = JSON.parse(String(data)) as [string, string, { id: string }?]
          if (msg[1] !== subId) return
          if (msg[0] === 'EVENT' && msg[2]) found.add(msg[2].id)
          else if (msg[0] === 'EOSE' || msg[0] === 'CLOSED') {
            clearTimeout(timer)
            ws.off('message', onMessage)
            ws.send(JSON.stringify(['CLOSE', subId]))
            resolve()
          }
        }
        ws.on('message', onMessage)
        const chunk = ids.slice(i, i + 500)
        ws.send(JSON.stringify(['REQ', subId, { ids: chunk, limit: chunk.length }]))
      })
    }
  } finally {
    ws.close()
  }
  return found
}

/** this process's open-files soft limit (Node raises it to the hard limit at start-up) */
export function openFilesLimit(): number {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'))
    return Number(line?.split(/\s+/)[3]) || Number.NaN
  } catch {
    return Number.NaN
  }
}
