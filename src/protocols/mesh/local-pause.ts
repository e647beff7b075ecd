/**
 * Cassandra's local-pause rule (`FailureDetector.interpret` skips conviction after a local pause over
 * `MAX_LOCAL_PAUSE_IN_MS`): when this node's own event loop stalled, the silence it sees from peers is its
 * own, so suspicion is suppressed for a grace period. Pure: the caller passes monotonic-clock ms.
 *
 * Ordering need: the runtime must note the last sampling period's delay before it asks `isSuspect`, or the
 * first check after a stall convicts on exactly the silence this guard exists to excuse.
 */
import { PHI_ACCRUAL_DEFAULTS, type PhiAccrual } from './phi-accrual.js'

export interface LocalPauseOptions {
  /** an observed event-loop delay above this counts as a local pause; at or below it, suspicion stands */
  allowanceMs: number
  /** how long after a pause is noticed suspicion stays suppressed */
  graceMs: number
}

const HEARTBEAT_INTERVAL_MS = PHI_ACCRUAL_DEFAULTS.firstHeartbeatEstimateMs

export const LOCAL_PAUSE_DEFAULTS: Readonly<LocalPauseOptions> = Object.freeze({
  // The margin we have: a healthy peer may be silent 3500 ms (interval + acceptable pause) and is convicted
  // at 4546 ms, so ≈ 1 s of our own stall can stack on a peer's worst legitimate silence without a false
  // conviction. Beyond that the stall, not the peer, would be what phi measures.
  allowanceMs: 1000,
  // Two heartbeat intervals plus the acceptable pause: every live peer gets two chances to be heard again
  // (re-anchoring its last heartbeat after our stall) even if it is itself in a permitted stall. A dead peer
  // is convicted at most this much later than it would have been.
  graceMs: 2 * HEARTBEAT_INTERVAL_MS + PHI_ACCRUAL_DEFAULTS.acceptableHeartbeatPauseMs,
})

export interface LocalPauseGuard {
  /** the runtime's report: the largest event-loop delay seen over the sampling period that ended at nowMs */
  notePause(nowMs: number, observedDelayMs: number): void
  isSuppressed(nowMs: number): boolean
  /** suspicion is suppressed while nowMs < this; undefined until the first pause over the allowance */
  readonly suppressedUntilMs: number | undefined
}

export function createLocalPauseGuard(opts: Partial<LocalPauseOptions> = {}): LocalPauseGuard {
  const o: LocalPauseOptions = { ...LOCAL_PAUSE_DEFAULTS, ...opts }
  // options come from the validated config, so a bad one is our bug: throw rather than return a Result
  if (!(o.allowanceMs >= 0)) throw new RangeError(`allowanceMs must be >= 0, got ${o.allowanceMs}`)
  if (!(o.graceMs >= 0)) throw new RangeError(`graceMs must be >= 0, got ${o.graceMs}`)
  let suppressedUntilMs: number | undefined

  return {
    notePause(nowMs, observedDelayMs) {
      if (!(observedDelayMs > o.allowanceMs)) return
      // a later pause extends the grace; an out-of-order report of an older one never shortens it
      const untilMs = nowMs + o.graceMs
      if (suppressedUntilMs === undefined || untilMs > suppressedUntilMs) suppressedUntilMs = untilMs
    },
    isSuppressed(nowMs) {
      return suppressedUntilMs !== undefined && nowMs < suppressedUntilMs
    },
    get suppressedUntilMs() {
      return suppressedUntilMs
    },
  }
}

/** A peer is suspect when its detector says so and our own recent stall cannot explain the silence. */
export function isSuspect(detector: Pick<PhiAccrual, 'isAvailable'>, guard: Pick<LocalPauseGuard, 'isSuppressed'>, nowMs: number): boolean {
  return !guard.isSuppressed(nowMs) && !detector.isAvailable(nowMs)
}
