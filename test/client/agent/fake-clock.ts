import type { AgentClock, TimerHandle } from '../../../src/client/agent/clock'

/** A clock that moves only when told: timers run in due order as `advance` passes them. */
export class FakeClock implements AgentClock {
  private t: number
  private seq = 0
  private readonly timers = new Map<number, { at: number; fn: () => void }>()
  /** every delay asked of setTimeout, in order */
  readonly requested: number[] = []

  constructor(startMs = 1_800_000_000_000) {
    this.t = startMs
  }

  now = (): number => this.t

  setTimeout = (fn: () => void, ms: number): TimerHandle => {
    const id = ++this.seq
    this.requested.push(ms)
    this.timers.set(id, { at: this.t + Math.max(0, ms), fn })
    return id as unknown as TimerHandle
  }

  clearTimeout = (h: TimerHandle): void => {
    this.timers.delete(h as unknown as number)
  }

  get pending(): number {
    return this.timers.size
  }

  /** moves time without running timers (for pure schedules that only read now()) */
  advanceSync(ms: number): void {
    this.t += ms
  }

  /** moves time forward, running each due timer and letting the promises it settles run before the next */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms
    for (;;) {
      await flushMicrotasks()
      const due = [...this.timers.entries()].filter(([, x]) => x.at <= end).sort((a, b) => a[1].at - b[1].at || a[0] - b[0])[0]
      if (!due) break
      this.timers.delete(due[0])
      this.t = Math.max(this.t, due[1].at)
      due[1].fn()
    }
    this.t = end
    await flushMicrotasks()
  }
}

/** one real macrotask turn: every promise chain the last timer started has settled by then */
export const flushMicrotasks = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/** A deterministic random source (mulberry32) that also hits both ends of [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0
  let calls = 0
  return () => {
    calls++
    if (calls % 97 === 0) return 0
    if (calls % 101 === 0) return 0.999_999_999
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}
