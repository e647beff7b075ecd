import { systemClock } from './clock.js'
import type { Clock, Kernel } from './types.js'

/**
 * Where a bounded queue skips (a bridge whose target mailbox is full, a community that could not take a
 * remote event), the skip is counted and reported as a kernel 'lagged' event, coalesced by time.
 */
export interface LagReporter {
  readonly count: (skipped: number) => void
  /** skipped items so far (for metrics) */
  readonly total: number
  /** reports what is still pending and clears the timer */
  dispose(): void
}

export interface LagReporterOptions {
  /** at most one 'lagged' event per interval (the first at once), so a flood does not flood supervision$ */
  reportIntervalMs?: number
  clock?: Clock
}

/** Emits kernel 'lagged' events for one watcher actor, coalesced by time. */
export function createLagReporter(kernel: Kernel, watcher: { path: string; kind: string }, opts: LagReporterOptions = {}): LagReporter {
  const clock = opts.clock ?? systemClock
  const intervalMs = opts.reportIntervalMs ?? 1_000
  let total = 0
  let pending = 0
  let lastReportAt = Number.NEGATIVE_INFINITY
  let timer: unknown
  const flush = () => {
    timer = undefined
    if (pending === 0) return
    lastReportAt = clock.now()
    const skipped = pending
    pending = 0
    kernel.report({ type: 'lagged', path: watcher.path, kind: watcher.kind, skipped })
  }
  return {
    count: (skipped) => {
      total += skipped
      pending += skipped
      if (timer !== undefined) return
      const waitMs = lastReportAt + intervalMs - clock.now()
      if (waitMs <= 0) flush()
      else timer = clock.setTimeout(flush, waitMs)
    },
    get total() {
      return total
    },
    dispose: () => {
      if (timer !== undefined) clock.clearTimeout(timer)
      flush()
    },
  }
}
