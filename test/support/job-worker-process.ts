// Starts test/support/job-worker-child.mjs: a worker agent serving dispatched jobs in its own process, and keeps
// what it printed about each job, so a fault test can pick a worker that holds a job and count the work done.
import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { bytesToHex } from '@noble/hashes/utils.js'
import { makeKeys } from './events'

const SCRIPT = fileURLToPath(new URL('./job-worker-child.mjs', import.meta.url))

export type WorkerStep = 'started' | 'completed' | 'aborted' | 'refused' | 'queued' | 'answered'

export interface WorkerLine {
  step: WorkerStep
  job: string
  generation: number
  /** for `aborted`: the JobError code; for `refused`: `<kind>:<prefix>`; for `queued`: the kind */
  why?: string
  atMs: number
}

export class JobWorkerProcess {
  readonly lines: WorkerLine[] = []
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  pubkey = ''
  private stderr = ''

  private constructor(
    readonly name: string,
    readonly proc: ChildProcess,
    /** the relay it connects to */
    readonly url: string,
  ) {
    this.exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })))
    proc.stderr?.on('data', (d: Buffer) => {
      this.stderr += d.toString()
    })
  }

  /** Resolves once the worker registered and serves `capability`. */
  static start(url: string, capability: string, name: string, seed: number): Promise<JobWorkerProcess> {
    const secretHex = bytesToHex(makeKeys().secretKey)
    const proc = spawn(process.execPath, [SCRIPT, url, secretHex, capability, name, String(seed)], { stdio: ['ignore', 'pipe', 'pipe'] })
    const w = new JobWorkerProcess(name, proc, url)
    return new Promise((resolve, reject) => {
      let buffered = ''
      proc.stdout?.on('data', (d: Buffer) => {
        buffered += d.toString()
        const lines = buffered.split('\n')
        buffered = lines.pop()!
        for (const line of lines) {
          if (w.read(line)) resolve(w)
        }
      })
      void w.exited.then(({ code, signal }) =>
        reject(new Error(`worker ${name} exited (${code ?? signal}) before it was ready: ${w.stderr.slice(-500)}`)),
      )
    })
  }

  /** the jobs it started and has not finished or given up: what a fault now would interrupt */
  holding(): WorkerLine[] {
    const open = new Map<string, WorkerLine>()
    for (const l of this.lines) {
      const key = `${l.job}/${l.generation}`
      if (l.step === 'started') open.set(key, l)
      else if (l.step === 'completed' || l.step === 'aborted') open.delete(key)
    }
    return [...open.values()]
  }

  get alive(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null
  }

  signal(sig: NodeJS.Signals): void {
    this.proc.kill(sig)
  }

  /** SIGCONT then SIGKILL: ends the worker whatever state the test left it in */
  async end(): Promise<void> {
    if (!this.alive) return
    this.proc.kill('SIGCONT')
    this.proc.kill('SIGKILL')
    await this.exited
  }

  /** true for the `ready` line */
  private read(line: string): boolean {
    const ready = /^ready ([0-9a-f]{64})$/.exec(line)
    if (ready) {
      this.pubkey = ready[1]!
      return true
    }
    const m = /^(started|completed|aborted|refused|queued|answered) ([0-9a-f]{64}) (\d+)(?: (\S+))?$/.exec(line)
    if (m) this.lines.push({ step: m[1] as WorkerStep, job: m[2]!, generation: Number(m[3]), why: m[4], atMs: Date.now() })
    return false
  }
}
