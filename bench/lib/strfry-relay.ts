// strfry (C++, LMDB, libsecp256k1) as a peer, started from the binary STRFRY_BIN names: the bench writes its
// config (a fresh database in the run's directory, loopback, a port of its own, this machine's open-files limit)
// and reads its CPU and memory from /proc, since it has no IPC of ours. The bench never builds or downloads it.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import { createReadStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { knobs } from '../knobs'
import { freePort } from './free-port'
import type { LoopDelay } from './loop-delay'
import { openFilesLimit, relayCpu } from './proc-readings'
import type { MemorySample } from './relay-ipc'
import type { RelayName, RelayProcess } from './relay-types'

/** Why strfry's rows are skipped, or undefined when a binary is given. */
export function strfryMissing(): string | undefined {
  if (!knobs.strfryBin) return 'STRFRY_BIN is not set (a strfry binary built outside this repository)'
  if (!existsSync(knobs.strfryBin)) return `STRFRY_BIN names no file: ${knobs.strfryBin}`
  return undefined
}

/** what `strfry --version` prints (the git describe of the tree it was built from) */
export function strfryVersion(): string {
  try {
    return execFileSync(knobs.strfryBin!, ['--version']).toString().trim()
  } catch {
    return 'unknown version'
  }
}

// Limits set like Apiary's defaults so that neither relay refuses what the other takes: a 128 KiB frame, 500
// events a page. Compression stays off: the bench's clients never offer it.
function configText(dir: string, port: number): string {
  return `db = "${join(dir, 'strfry-db')}/"
dbParams { maxreaders = 256, mapsize = 10995116277760, noReadAhead = false }
events { maxEventSize = 131072, rejectEventsNewerThanSeconds = 900, rejectEventsOlderThanSeconds = 94608000, maxNumTags = 2000, maxTagValSize = 1024 }
relay {
  bind = "127.0.0.1"
  port = ${port}
  nofiles = ${Math.min(openFilesLimit() || 65_536, 524_288)}
  maxWebsocketPayloadSize = 131072
  maxFilterLimit = 500
  maxSubsPerConnection = 200
  auth { enabled = false }
  compression { enabled = false, slidingWindow = false }
  logging { invalidEvents = false }
  negentropy { enabled = false }
}
`
}

/** RSS of `pid` in bytes, from /proc (strfry has no managed heap: its RSS is all it holds). */
function rssBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'))
  return Number(line?.split(/\s+/)[1] ?? Number.NaN) * 1024
}

const NO_LOOP: LoopDelay = { p50Ms: Number.NaN, p99Ms: Number.NaN, maxMs: Number.NaN, meanMs: Number.NaN }

/** Starts strfry on `dir` (a fresh database there); resolves once its port answers. */
export async function spawnStrfry(dir: string): Promise<RelayProcess> {
  const bin = knobs.strfryBin
  if (!bin) throw new Error(strfryMissing())
  mkdirSync(join(dir, 'strfry-db'), { recursive: true })
  const config = join(dir, 'strfry.conf')
  const port = await freePort()
  writeFileSync(config, configText(dir, port))
  const child: ChildProcess = spawn(bin, ['--config', config, 'relay'], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  // a binary that cannot start (ENOENT, EACCES) fails the run, not the bench
  child.once('error', (err) => {
    stderr += `\n${err.message}`
  })
  child.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4_000)
  })
  await waitForListening(child, port, () => stderr)
  const pid = child.pid!
  const cpu = relayCpu(pid)
  return {
    name: 'strfry',
    url: `ws://127.0.0.1:${port}`,
    pid,
    memory: async (): Promise<MemorySample> => {
      const rss = rssBytes(pid)
      return { rss, heapUsed: rss, external: 0, arrayBuffers: 0 }
    },
    cpuMicros: async () => Math.round(cpu.seconds() * 1e6),
    spanStart: async () => {},
    spanStop: async () => NO_LOOP,
    prefill: (file, count) => importFixture(bin, config, file, count),
    close: () => stop(child),
  }
}

/** strfry prints its listening line to stderr; the port answering TCP is the signal that does not depend on it. */
async function waitForListening(child: ChildProcess, port: number, stderr: () => string): Promise<void> {
  const deadline = Date.now() + 30_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.pid === undefined)
      throw new Error(`strfry exited (${child.exitCode}): ${stderr().trim().split('\n').pop()}`)
    if (await answers(port)) return
    await new Promise((r) => setTimeout(r, 50))
  }
  child.kill('SIGKILL')
  throw new Error(`strfry did not listen within 30 s: ${stderr().trim().split('\n').pop()}`)
}

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

/** `strfry import --no-verify` of a fixture file's first `count` events (its first line is the cache header). */
async function importFixture(bin: string, config: string, file: string, count: number): Promise<number> {
  const importer = spawn(bin, ['--config', config, 'import', '--no-verify'], { stdio: ['pipe', 'ignore', 'pipe'] })
  let stderr = ''
  importer.stderr.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4_000)
  })
  const exited = new Promise<number | null>((resolve, reject) => {
    importer.once('error', reject)
    importer.once('exit', resolve)
  })
  // an importer that exits early breaks the pipe: its exit code says why
  importer.stdin.on('error', () => {})
  let n = -1
  for await (const line of createInterface({ input: createReadStream(file) })) {
    if (++n === 0) continue
    if (n > count) break
    if (!importer.stdin.write(`${line}\n`)) await once(importer.stdin, 'drain')
  }
  importer.stdin.end()
  const code = await exited
  if (code !== 0) throw new Error(`strfry import exited ${code}: ${stderr.trim().split('\n').pop()}`)
  // strfry's own count of what it stored: "Done. Processed N lines. M added, R rejected, D dups"
  const stored = /Done\. Processed \d+ lines\. (\d+) added/.exec(stderr)
  if (!stored) throw new Error(`strfry import: no count of stored events in its output: ${stderr.trim().split('\n').pop()}`)
  return Number(stored[1])
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((r) => child.once('exit', () => r()))
  child.kill('SIGTERM')
  const killer = setTimeout(() => child.kill('SIGKILL'), 10_000)
  await exited
  clearTimeout(killer)
}

/** The relays a comparison runs: Apiary and the baseline, and strfry when a binary is given. */
export function comparedRelays(): readonly RelayName[] {
  return strfryMissing() ? ['apiary', 'baseline'] : ['apiary', 'baseline', 'strfry']
}
