// What the bench reads of processes from /proc (Linux): CPU seconds of a process and of each of its threads
// (no IPC to a relay busy with a storm), a process's resident memory, the local PostgreSQL server's, whether a
// process is alive, CPU pinning, and this process's open-files limit.
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import os from 'node:os'

/** whether process `pid` still exists */
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

/** resident memory of `pid` in bytes, from /proc/<pid>/status VmRSS (no IPC to a busy relay); NaN once it is gone */
export function rssBytes(pid: number): number {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('VmRSS:'))
    return Number(line?.split(/\s+/)[1]) * 1024
  } catch {
    return Number.NaN
  }
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

/**
 * CPU seconds used so far by each local `postgres` server process (empty where /proc is not). It counts every
 * client's load on a shared server; a backend that exits inside a window takes its share with it.
 */
export function postgresCpuSeconds(): Map<number, number> {
  const out = new Map<number, number>()
  let entries: string[]
  try {
    entries = readdirSync('/proc')
  } catch {
    return out
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== 'postgres') continue
      out.set(Number(entry), statSeconds(`/proc/${entry}/stat`))
    } catch {} // the process exited between the listing and the read
  }
  return out
}

export function postgresCpuSince(before: Map<number, number>): number {
  let total = 0
  for (const [pid, seconds] of postgresCpuSeconds()) total += seconds - (before.get(pid) ?? 0)
  return total
}
