import type { Clock } from './types.js'

/**
 * Counts dropped messages of one actor and reports them coalesced: the first drop after a quiet interval
 * is reported at once; drops within intervalMs of a report are summed into one trailing report when the
 * interval ends. A flood therefore costs one event per intervalMs, and the reported counts add up to the
 * exact number dropped.
 */
export class DropReporter {
  total = 0
  private unreported = 0
  private lastReportAt = Number.NEGATIVE_INFINITY
  private timer: unknown = undefined

  constructor(
    private readonly clock: Clock,
    private readonly intervalMs: number,
    private readonly report: (dropped: number) => void,
  ) {}

  drop(): void {
    this.total++
    this.unreported++
    const now = this.clock.now()
    if (now - this.lastReportAt >= this.intervalMs) {
      this.flush()
    } else if (this.timer === undefined) {
      this.timer = this.clock.setTimeout(
        () => {
          this.timer = undefined
          this.flush()
        },
        this.lastReportAt + this.intervalMs - now,
      )
    }
  }

  /** reports what is pending now (also on stop, so no drop goes unreported) */
  flush(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer)
    this.timer = undefined
    if (this.unreported === 0) return
    const dropped = this.unreported
    this.unreported = 0
    this.lastReportAt = this.clock.now()
    this.report(dropped)
  }
}
