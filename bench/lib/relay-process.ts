// The parent side of a relay in its own process: fork Apiary (bench/processes/serve-apiary.ts) or the baseline
// (bench/processes/serve-baseline.ts) and ask it over IPC, or start strfry (bench/lib/strfry-relay.ts); close it;
// and `measureInChild` for a measurement script that wants a fresh process of its own.
import { type ChildProcess, execFile, fork } from 'node:child_process'
import { createWriteStream, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { knobs } from '../knobs'
import type { LoopDelay } from './loop-delay'
import type { MemorySample, RelayReply } from './relay-ipc'
import type { RelayName, RelayProcess } from './relay-types'
import { spawnStrfry } from './strfry-relay'

export type { RelayName, RelayProcess }

const here = (f: string) => fileURLToPath(new URL(f, import.meta.url))
const CHILD_SCRIPTS: Record<Exclude<RelayName, 'strfry'>, string> = {
  apiary: here('../processes/serve-apiary.ts'),
  baseline: here('../processes/serve-baseline.ts'),
}

/** The flags between `node` and the script in package.json's `start`: the relay is measured as it is started. */
const START_NODE_FLAGS: string[] = (() => {
  const pkg = JSON.parse(readFileSync(here('../../package.json'), 'utf8')) as { scripts: { start: string } }
  const [, ...words] = pkg.scripts.start.split(/\s+/)
  return words.slice(
    0,
    words.findIndex((w) => !w.startsWith('-')),
  )
})()

/** A measurement script in a fresh process (`node --import tsx`); its last stdout line is its JSON result. */
export function measureInChild<T>(script: string, args: readonly string[], label: string): Promise<T> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--import', 'tsx', script, ...args], { maxBuffer: 1 << 20 }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`${label}: ${stderr.trim().split('\n').pop() ?? error.message}`))
      resolve(JSON.parse(stdout.trim().split('\n').pop()!) as T)
    })
  })
}

/** `fn` with a relay started on `dir`, closed afterwards whatever happens. `config`: Apiary's, for this run. */
export async function withRelay<T>(
  name: RelayName,
  dir: string,
  fn: (relay: RelayProcess) => Promise<T>,
  config: Record<string, unknown> = {},
): Promise<T> {
  const relay = await spawnRelay(name, dir, config)
  try {
    return await fn(relay)
  } finally {
    await relay.close()
  }
}

/** Forks a relay child; rejects with the child's own error (or its stderr's tail) if it does not come up. */
export function spawnRelay(name: RelayName, dataDir: string, config: Record<string, unknown> = {}): Promise<RelayProcess> {
  // strfry is a binary of its own, not a Node child: it takes no config of ours
  if (name === 'strfry') return spawnStrfry(dataDir)
  const child: ChildProcess = fork(CHILD_SCRIPTS[name], [dataDir, JSON.stringify(config)], {
    execArgv: ['--expose-gc', '--import', 'tsx', ...START_NODE_FLAGS, ...knobs.childNodeArgs],
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  })
  let stderr = ''
  child.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4_000)
  })
  if (knobs.childStdout) child.stdout?.pipe(createWriteStream(knobs.childStdout, { flags: 'a' }))
  else child.stdout?.resume()
  const ipc = ipcOf(child, () => stderrTail(stderr))
  return new Promise<RelayProcess>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`relay did not start within 60 s${stderrTail(stderr)}`))
    }, 60_000)
    child.on('message', (m: RelayReply) => {
      if (!('type' in m)) return
      clearTimeout(timer)
      if (m.type === 'failed') return reject(new Error(m.error.split('\n')[0]))
      resolve({
        name,
        url: m.url,
        pid: child.pid!,
        memory: () => ipc.request<MemorySample>('mem', {}, 60_000),
        cpuMicros: () => ipc.request<number>('cpu', {}, 10_000),
        spanStart: () => ipc.request<void>('span-start', {}, 10_000),
        spanStop: () => ipc.request<LoopDelay>('span-stop', {}, 60_000),
        prefill: (file, count) => ipc.request<number>('prefill', { file, count }),
        close: () => closeChild(child, () => ipc.request('close', {}, 30_000)),
      })
    })
    child.on('exit', (code, signal) => {
      clearTimeout(timer)
      reject(new Error(`relay process exited (${signal ?? code})${stderrTail(stderr)}`)) // a no-op once resolved
    })
  })
}

/** Requests by id over the child's IPC channel; all pending ones fail when the child exits. */
function ipcOf(child: ChildProcess, tail: () => string) {
  let nextId = 1
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>()
  child.on('message', (m: RelayReply) => {
    if (!('id' in m)) return
    const p = pending.get(m.id)
    pending.delete(m.id)
    if (m.ok) p?.resolve(m.result)
    else p?.reject(new Error(m.error))
  })
  child.on('exit', (code, signal) => {
    for (const p of pending.values()) p.reject(new Error(`relay process exited (${signal ?? code})${tail()}`))
    pending.clear()
  })
  const request = <T>(cmd: string, args: Record<string, unknown>, timeoutMs = 600_000): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      if (!child.connected) return reject(new Error(`relay process gone${tail()}`))
      const id = nextId++
      const timer = setTimeout(() => {
        pending.delete(id)
        reject(new Error(`relay process did not answer ${cmd}`))
      }, timeoutMs)
      const settle =
        <A>(f: (a: A) => void) =>
        (a: A) => {
          clearTimeout(timer)
          f(a)
        }
      pending.set(id, { resolve: settle((v) => resolve(v as T)), reject: settle(reject) })
      child.send({ id, cmd, ...args })
    })
  return { request }
}

async function closeChild(child: ChildProcess, askToClose: () => Promise<unknown>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((r) => child.once('exit', () => r()))
  try {
    await askToClose()
  } catch {
    child.kill('SIGKILL')
  }
  const killer = setTimeout(() => child.kill('SIGKILL'), 10_000)
  await exited
  clearTimeout(killer)
}

function stderrTail(stderr: string): string {
  const lines = stderr.trim().split('\n').filter(Boolean)
  const firstError = lines.find((l) => /Error|error/.test(l))
  return lines.length ? `: ${firstError ?? lines[lines.length - 1]}` : ''
}
