import type { Observer } from 'rxjs'
import { type Clock, type Kernel, systemClock, type TypedRef, tell } from '../kernel/index.js'

/**
 * Bus → mailbox (DESIGN §4 bridges): an observer that tells each item to ref. The bounded buffer is the
 * actor's mailbox; when it refuses (full, or the actor is stopped), the item is skipped and counted as lag,
 * never retried or awaited: the bus delivers to every watcher synchronously, and one slow actor must not
 * hold up the others or the socket. Whoever subscribes ends the subscription when ref's actor stops.
 */
export function deliverTo<T, M>(
  ref: TypedRef<M>,
  toMsg: (item: T) => M,
  onLag: (skipped: number) => void,
): Partial<Observer<T>> {
  return {
    next: (item) => {
      if (!tell(ref, toMsg(item))) onLag(1)
    },
  }
}

export interface LagReporter {
  /** pass as deliverTo's onLag */
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
export function createLagReporter(
  kernel: Kernel,
  watcher: { path: string; kind: string },
  opts: LagReporterOptions = {},
): LagReporter {
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
