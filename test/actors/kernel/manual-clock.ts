import type { Clock } from '../../../src/actors/kernel'

interface Timer {
  at: number
  seq: number
  fn: () => void
}

/**
 * A clock only the test moves. vitest's fake timers are not an option: they would fake setImmediate too,
 * and nact schedules every message with setImmediate (docs/architecture.md §4.1).
 */
export class ManualClock implements Clock {
  private t = 0
  private seq = 0
  private readonly timers = new Map<number, Timer>()

  now(): number {
    return this.t
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const seq = ++this.seq
    this.timers.set(seq, { at: this.t + Math.max(0, ms), seq, fn })
    return seq
  }

  clearTimeout(h: unknown): void {
    this.timers.delete(h as number)
  }

  /** moves time forward, firing due timers in time order (ties in the order they were set) */
  advance(ms: number): void {
    const until = this.t + ms
    for (let next = this.nextDue(until); next !== undefined; next = this.nextDue(until)) {
      this.timers.delete(next.seq)
      this.t = next.at
      next.fn()
    }
    this.t = until
  }

  pendingTimers(): number {
    return this.timers.size
  }

  private nextDue(until: number): Timer | undefined {
    let best: Timer | undefined
    for (const timer of this.timers.values()) {
      if (timer.at > until) continue
      if (best === undefined || timer.at < best.at || (timer.at === best.at && timer.seq < best.seq)) best = timer
    }
    return best
  }
}
