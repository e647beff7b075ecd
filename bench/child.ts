// Both sides of running a relay in its own process (so the load generator's CPU and memory stay out of its
// figures). The child prints its URL on stdout and answers IPC requests: memory after GC, event-loop delay
// sampling, pre-fill, close. The parent forks it with `--expose-gc --import tsx`.
import { type ChildProcess, execFile, fork } from 'node:child_process'
import { createWriteStream, readFileSync, writeFileSync } from 'node:fs'
import { Session } from 'node:inspector'
import type { IntervalHistogram } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { writeHeapSnapshot } from 'node:v8'
import { type LoopDelay, startGcPauses, startLoopDelay, startStallTimeline, stopLoopDelay } from './loop-delay'

export interface MemorySample {
  rss: number
  heapUsed: number
  external: number
  arrayBuffers: number
}

export type { LoopDelay } from './loop-delay'

export interface StartedRelay {
  url: string
  close(): Promise<void>
  /** load a fixture file (jsonl, first `count` events) straight into storage; optional per relay */
  prefill?(file: string, count: number): Promise<number>
}

type Request =
  | { id: number; cmd: 'mem' }
  | { id: number; cmd: 'cpu' }
  | { id: number; cmd: 'eld-start' }
  | { id: number; cmd: 'eld-stop' }
  | { id: number; cmd: 'close' }
  | { id: number; cmd: 'prefill'; file: string; count: number }

type Reply =
  | { type: 'ready'; url: string }
  | { type: 'failed'; error: string }
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; error: string }

// ---------------------------------------------------------------- child side

export async function runRelayChild(start: (dataDir: string) => Promise<StartedRelay>): Promise<void> {
  const send = (m: Reply) => process.send?.(m)
  const dataDir = process.argv[2]
  if (!dataDir || !process.send) {
    console.error('usage: forked by bench/child.ts with <dataDir>')
    process.exit(2)
  }
  let relay: StartedRelay
  try {
    relay = await start(dataDir)
  } catch (error) {
    send({ type: 'failed', error: errorText(error) })
    process.exitCode = 1
    setTimeout(() => process.exit(1), 200).unref()
    return
  }
  let eld: IntervalHistogram | undefined
  let gcPauses: ReturnType<typeof startGcPauses> | undefined
  let stalls: ReturnType<typeof startStallTimeline> | undefined
  let allocations: (() => Promise<void>) | undefined
  let cpuProfile: (() => Promise<void>) | undefined
  process.stdout.write(`${relay.url}\n`)
  send({ type: 'ready', url: relay.url })
  process.on('message', async (req: Request) => {
    try {
      let result: unknown
      switch (req.cmd) {
        case 'mem': {
          const gc = (globalThis as { gc?: () => void }).gc
          for (let i = 0; i < 3; i++) {
            gc?.()
            await new Promise((r) => setImmediate(r))
          }
          const m = process.memoryUsage()
          result = { rss: m.rss, heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers } satisfies MemorySample
          break
        }
        case 'cpu': {
          // whole process: the main thread and every worker thread (verifier pool, storage)
          const c = process.cpuUsage()
          result = c.user + c.system
          break
        }
        case 'eld-start':
          // diagnostics: two heap snapshots 3 s apart, 5 s into the measured span; the objects new in the second
          // and alive are what the young generation copies (DevTools: "objects allocated between snapshots")
          if (process.env.BENCH_HEAP_SNAPSHOTS) snapshotPair(process.env.BENCH_HEAP_SNAPSHOTS)
          if (process.env.BENCH_ALLOCATION_PROFILE) allocations = startAllocationProfile(process.env.BENCH_ALLOCATION_PROFILE)
          if (process.env.BENCH_CPU_PROFILE) cpuProfile = startCpuProfile(process.env.BENCH_CPU_PROFILE)
          eld?.disable()
          eld = startLoopDelay()
          gcPauses?.stop()
          gcPauses = startGcPauses()
          stalls?.stop()
          stalls = startStallTimeline('stalls')
          result = null
          break
        case 'eld-stop': {
          if (!eld) throw new Error('eld-stop without eld-start')
          result = { ...stopLoopDelay(eld), gc: gcPauses?.stop() } satisfies LoopDelay
          stalls?.stop()
          stalls = undefined
          await allocations?.()
          allocations = undefined
          await cpuProfile?.()
          cpuProfile = undefined
          eld = undefined
          gcPauses = undefined
          break
        }
        case 'prefill':
          if (!relay.prefill) throw new Error('this relay has no direct pre-fill')
          result = await relay.prefill(req.file, req.count)
          break
        case 'close':
          await relay.close()
          send({ id: req.id, ok: true, result: null })
          setTimeout(() => process.exit(0), 50)
          return
      }
      send({ id: req.id, ok: true, result })
    } catch (error) {
      send({ id: req.id, ok: false, error: errorText(error) })
    }
  })
  process.on('disconnect', () => {
    relay.close().finally(() => process.exit(0))
  })
}

function errorText(error: unknown): string {
  return error instanceof Error
    ? `${error.message}${error.stack ? `\n${error.stack.split('\n').slice(1, 4).join('\n')}` : ''}`
    : String(error)
}

// ---------------------------------------------------------------- parent side

export interface RelayProcess {
  url: string
  pid: number
  memory(): Promise<MemorySample>
  /** CPU time the relay process has used so far (all threads), microseconds */
  cpuMicros(): Promise<number>
  loopDelayStart(): Promise<void>
  loopDelayStop(): Promise<LoopDelay>
  prefill(file: string, count: number): Promise<number>
  close(): Promise<void>
}

const here = (f: string) => fileURLToPath(new URL(f, import.meta.url))
export const CHILD_SCRIPTS = { apiary: here('./serve-apiary.ts'), baseline: here('./serve-baseline.ts') } as const

/** Node flags from the environment variable `name`, space-separated (BENCH_CHILD_NODE_ARGS and the like); none when unset. */
export const nodeArgsFromEnv = (name: string): string[] => process.env[name]?.split(' ').filter(Boolean) ?? []

/**
 * A measurement script in its own process (`node --import tsx <script> ...args`: a fresh heap each time, as the
 * store scenarios want); its last stdout line is the JSON result. A failure rejects with its last stderr line.
 */
export function measureInChild<T>(script: string, args: readonly string[], label: string): Promise<T> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--import', 'tsx', script, ...args], { maxBuffer: 1 << 20 }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`${label}: ${stderr.trim().split('\n').pop() ?? error.message}`))
      resolve(JSON.parse(stdout.trim().split('\n').pop()!) as T)
    })
  })
}

/** The flags between `node` and the script in package.json's `start`: the relay is measured as it is started. */
const START_NODE_FLAGS: string[] = (() => {
  const pkg = JSON.parse(readFileSync(here('../package.json'), 'utf8')) as { scripts: { start: string } }
  const [, ...words] = pkg.scripts.start.split(/\s+/)
  const script = words.findIndex((w) => !w.startsWith('-'))
  return words.slice(0, script)
})()

/**
 * Fork a relay child; rejects with the child's own error (or its stderr tail) if it does not come up.
 * `env` is added to this process's environment (bench/serve-apiary.ts reads BENCH_APIARY_CONFIG from it).
 */
export function spawnRelay(
  script: string,
  dataDir: string,
  startTimeoutMs = 60_000,
  env: Record<string, string> = {},
): Promise<RelayProcess> {
  const child: ChildProcess = fork(script, [dataDir], {
    // the node flags `npm start` gives the relay (package.json), for Apiary and the baseline alike; then
    // BENCH_CHILD_NODE_ARGS: extra node flags for the relay child, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"
    execArgv: ['--expose-gc', '--import', 'tsx', ...START_NODE_FLAGS, ...nodeArgsFromEnv('BENCH_CHILD_NODE_ARGS')],
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    env: { ...process.env, ...env },
  })
  let stderr = ''
  child.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4_000)
  })
  // BENCH_CHILD_STDOUT: a file the child's stdout is appended to (e.g. with --trace-gc-nvp in BENCH_CHILD_NODE_ARGS)
  if (process.env.BENCH_CHILD_STDOUT) child.stdout?.pipe(createWriteStream(process.env.BENCH_CHILD_STDOUT, { flags: 'a' }))
  else child.stdout?.resume()
  let nextId = 1
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>()
  const request = <T>(msg: Record<string, unknown>, timeoutMs = 600_000): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      if (!child.connected) return reject(new Error(`relay process gone${stderrTail(stderr)}`))
      const id = nextId++
      const timer = setTimeout(() => {
        pending.delete(id)
        reject(new Error(`relay process did not answer ${String(msg.cmd)}`))
      }, timeoutMs)
      pending.set(id, {
        resolve: (v) => {
          clearTimeout(timer)
          resolve(v as T)
        },
        reject: (e) => {
          clearTimeout(timer)
          reject(e)
        },
      })
      child.send({ id, ...msg })
    })
  return new Promise<RelayProcess>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`relay did not start within ${startTimeoutMs} ms${stderrTail(stderr)}`))
    }, startTimeoutMs)
    child.on('message', (m: Reply) => {
      if ('type' in m && m.type === 'ready') {
        clearTimeout(timer)
        resolve({
          url: m.url,
          pid: child.pid!,
          memory: () => request<MemorySample>({ cmd: 'mem' }, 60_000),
          cpuMicros: () => request<number>({ cmd: 'cpu' }, 10_000),
          loopDelayStart: () => request<void>({ cmd: 'eld-start' }, 10_000),
          loopDelayStop: () => request<LoopDelay>({ cmd: 'eld-stop' }, 10_000),
          prefill: (file, count) => request<number>({ cmd: 'prefill', file, count }),
          close: async () => {
            if (child.exitCode !== null || child.signalCode !== null) return
            const exited = new Promise<void>((r) => child.once('exit', () => r()))
            try {
              await request({ cmd: 'close' }, 30_000)
            } catch {
              child.kill('SIGKILL')
            }
            const killer = setTimeout(() => child.kill('SIGKILL'), 10_000)
            await exited
            clearTimeout(killer)
          },
        })
      } else if ('type' in m && m.type === 'failed') {
        clearTimeout(timer)
        reject(new Error(m.error.split('\n')[0]))
      } else if ('id' in m) {
        const p = pending.get(m.id)
        pending.delete(m.id)
        if (m.ok) p?.resolve(m.result)
        else p?.reject(new Error(m.error))
      }
    })
    child.on('exit', (code, signal) => {
      clearTimeout(timer)
      const err = new Error(`relay process exited (${signal ?? code})${stderrTail(stderr)}`)
      for (const p of pending.values()) p.reject(err)
      pending.clear()
      reject(err) // no-op once resolved
    })
  })
}

function stderrTail(stderr: string): string {
  const lines = stderr.trim().split('\n').filter(Boolean)
  const firstError = lines.find((l) => /Error|error/.test(l))
  return lines.length ? `: ${firstError ?? lines[lines.length - 1]}` : ''
}

/** An inspector session on this process: `post` a DevTools Protocol method and get its result. */
function inspectorSession(): { post(method: string, params?: object): Promise<unknown>; disconnect(): void } {
  const session = new Session()
  session.connect()
  return {
    post: (method, params) => new Promise((resolve, reject) => session.post(method, params ?? {}, (e, r) => (e ? reject(e) : resolve(r)))),
    disconnect: () => session.disconnect(),
  }
}

/**
 * Diagnostics: V8's sampling heap profiler over the measured span (a sample every ~32 KB allocated), written to
 * `dir/alloc-<pid>.heapprofile` for DevTools when the span ends: where the young generation's bytes come from.
 */
function startAllocationProfile(dir: string): () => Promise<void> {
  const { post, disconnect } = inspectorSession()
  // BENCH_ALLOCATION_PROFILE_KEEP: 'survivors' leaves out what the young generation's scavenges collected (what
  // is left survived one: the bytes they copy and promote), 'live' also what mark-compacts collected
  const keep = process.env.BENCH_ALLOCATION_PROFILE_KEEP
  if (keep !== undefined && keep !== 'survivors' && keep !== 'live')
    throw new Error(`BENCH_ALLOCATION_PROFILE_KEEP is survivors or live, not ${keep}`)
  const started = post('HeapProfiler.startSampling', {
    samplingInterval: 32_768,
    includeObjectsCollectedByMajorGC: keep !== 'live',
    includeObjectsCollectedByMinorGC: keep === undefined,
  })
  // a failed start is reported by the stop that awaits it
  started.catch(() => {})
  return async () => {
    await started
    // without a scavenge first, the young garbage of the last seconds would count as having survived one
    if (keep === 'survivors') (globalThis as { gc?: (o: object) => void }).gc?.({ type: 'minor', execution: 'sync' })
    const { profile } = (await post('HeapProfiler.stopSampling')) as { profile: unknown }
    writeFileSync(`${dir}/alloc-${process.pid}.heapprofile`, JSON.stringify(profile))
    disconnect()
  }
}

/**
 * Diagnostics: V8's CPU profiler over the measured span (a sample every 250 µs), written to
 * `dir/cpu-<pid>.cpuprofile` when the span ends. Unlike --cpu-prof it is written by a relay that is later
 * SIGKILLed (the agents' steady span).
 */
function startCpuProfile(dir: string): () => Promise<void> {
  const { post, disconnect } = inspectorSession()
  const started = post('Profiler.enable')
    .then(() => post('Profiler.setSamplingInterval', { interval: 250 }))
    .then(() => post('Profiler.start'))
  started.catch(() => {})
  return async () => {
    await started
    const { profile } = (await post('Profiler.stop')) as { profile: unknown }
    writeFileSync(`${dir}/cpu-${process.pid}.cpuprofile`, JSON.stringify(profile))
    disconnect()
  }
}

function snapshotPair(dir: string): void {
  const at = (name: string) => () => writeHeapSnapshot(`${dir}/${name}-${process.pid}.heapsnapshot`)
  setTimeout(() => {
    at('a')()
    setTimeout(at('b'), 3000)
  }, 5000)
}
