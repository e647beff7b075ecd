// The worker agents of a dispatched-jobs fault run and the faults done to them: a worker that holds a job,
// chosen with a seeded PRNG, is killed with SIGKILL (and a new one started, so capacity stays) or frozen with
// SIGSTOP for a while and resumed. It keeps what each fault interrupted, for the checker.
import { JobWorkerProcess } from './job-worker-process'

/** mulberry32: a run's fault plan and its workers' job durations follow from one seed */
export function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export interface Fault {
  what: 'kill' | 'freeze'
  worker: string
  /** `<job>/<generation>` it held when the fault hit */
  held: string[]
  atMs: number
}

export interface FleetOptions {
  /** worker n connects to urls[n mod urls.length] */
  urls: string[]
  capability: string
  /** worker n's job durations follow from seed + n */
  seed: number
  freezeMs: number
  random: () => number
}

export class Fleet {
  readonly workers: JobWorkerProcess[] = []
  readonly faults: Fault[] = []
  /** `<worker>/<job>/<generation>`: what a worker held when it was killed or frozen */
  readonly interrupted = new Set<string>()
  private readonly frozen = new Set<JobWorkerProcess>()
  private readonly thaws: Promise<void>[] = []
  private started = 0

  constructor(private readonly o: FleetOptions) {}

  async add(count: number): Promise<void> {
    const numbers = Array.from({ length: count }, () => ++this.started)
    const { urls, capability, seed } = this.o
    const urlOf = (n: number) => urls[n % urls.length]!
    this.workers.push(...(await Promise.all(numbers.map((n) => JobWorkerProcess.start(urlOf(n), capability, `w${n}`, seed + n)))))
  }

  /**
   * A node died under these workers: what they held is interrupted (their connection went with it). Their lines
   * come through a pipe and may be read after the kill, so settle() looks again once the run is over; this
   * returns what is known now.
   */
  interruptOn(url: string): number {
    this.deadNodes.push(url)
    return this.workers.filter((x) => x.url === url).reduce((n, w) => n + w.holding().length, 0)
  }

  /**
   * Every job a worker on a dead node started and whose result the relay did not take (OK true), as interrupted:
   * a handler that returned just before the kill may have sent a result the dead node never stored.
   */
  settle(): void {
    for (const url of this.deadNodes)
      for (const w of this.workers.filter((x) => x.url === url))
        for (const l of w.lines.filter((x) => x.step === 'started')) {
          const answered = w.lines.some((x) => x.step === 'answered' && x.job === l.job && x.generation === l.generation)
          if (!answered) this.interrupted.add(`${w.name}/${l.job}/${l.generation}`)
        }
  }

  private readonly deadNodes: string[] = []

  /** Each fault of `plan` in turn, a random 0.4–1.2 s apart, on a worker that holds a job when one does. */
  async inject(plan: Fault['what'][], stillRunning: () => boolean): Promise<void> {
    for (const what of plan) {
      await sleep(400 + this.o.random() * 800)
      let w = this.holder()
      while (w === undefined && stillRunning()) {
        await sleep(5)
        w = this.holder()
      }
      if (w === undefined) return
      const held = w.holding().map((l) => `${l.job}/${l.generation}`)
      for (const h of held) this.interrupted.add(`${w.name}/${h}`)
      this.faults.push({ what, worker: w.name, held, atMs: Date.now() })
      if (what === 'kill') {
        w.signal('SIGKILL')
        await this.add(1)
      } else this.freeze(w)
    }
  }

  /** resolves once every frozen worker was resumed */
  async thawed(): Promise<void> {
    await Promise.all(this.thaws)
  }

  async end(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.end()))
  }

  /** a live, unfrozen worker holding a job */
  private holder(): JobWorkerProcess | undefined {
    const candidates = this.workers.filter((w) => w.alive && !this.frozen.has(w) && w.holding().length > 0)
    return candidates[Math.floor(this.o.random() * candidates.length)]
  }

  private freeze(w: JobWorkerProcess): void {
    w.signal('SIGSTOP')
    this.frozen.add(w)
    this.thaws.push(
      sleep(this.o.freezeMs).then(() => {
        w.signal('SIGCONT')
        this.frozen.delete(w)
      }),
    )
  }
}
