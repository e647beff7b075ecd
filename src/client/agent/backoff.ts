// Exponential backoff with jitter that only lengthens (never earlier than the schedule), and a reconnect
// schedule that resets only after a connection stayed up for a stable period: a connect-then-kicked loop
// keeps backing off instead of reconnecting hot (nostr-tools resets on the first open).
import { type BackoffPolicy, spreadBackoffDelayMs } from '../../protocols/backoff.js'
import type { RandomSource } from './clock.js'

export class ReconnectSchedule {
  private attempt = 0
  private upSinceMs: number | undefined

  constructor(
    private readonly policy: BackoffPolicy,
    private readonly stableMs: number,
    private readonly random: RandomSource,
  ) {}

  /** the connection reached ACTIVE */
  connected(nowMs: number): void {
    this.upSinceMs = nowMs
  }

  /**
   * The connection stopped being ACTIVE without dropping (SUSPECT, ZOMBIE): only time ACTIVE counts toward
   * the stable period, so a connection that goes silent at once and lingers does not reset the backoff.
   */
  degraded(nowMs: number): void {
    if (this.upSinceMs !== undefined && nowMs - this.upSinceMs >= this.stableMs) this.attempt = 0
    this.upSinceMs = undefined
  }

  /**
   * The connection failed or dropped: the delay before the next attempt. `retryAfterMs` (a relay's
   * `rate-limited: retry in Ns`) lengthens it, never shortens it.
   */
  failed(nowMs: number, retryAfterMs = 0): number {
    if (this.upSinceMs !== undefined && nowMs - this.upSinceMs >= this.stableMs) this.attempt = 0
    this.upSinceMs = undefined
    const delay = spreadBackoffDelayMs(this.policy, this.attempt, this.random())
    this.attempt++
    return Math.max(delay, retryAfterMs)
  }

  get attempts(): number {
    return this.attempt
  }
}

/** `rate-limited: retry in 3s` (also `3.5s`, `200ms`) → milliseconds; undefined when the reason names no delay. */
export function parseRetryAfterMs(reason: string): number | undefined {
  const m = /retry in (\d+(?:\.\d+)?)\s*(ms|s)\b/i.exec(reason)
  if (!m) return undefined
  const n = Number(m[1])
  return m[2]!.toLowerCase() === 'ms' ? n : n * 1000
}
