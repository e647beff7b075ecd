import type { SupervisionPolicy } from './types.js'

/** docs/architecture.md §4.4 defaults; a Redis subscriber bridge overrides backoff to 1 s → 30 s. */
export const defaultPolicy: Readonly<SupervisionPolicy> = Object.freeze({
  mode: 'permanent',
  maxRestarts: 5,
  windowMs: 60_000,
  backoff: Object.freeze({ minMs: 100, maxMs: 30_000, jitter: 0.2 }),
  resetAfterMs: 30_000,
  stashCapacity: 1000,
  // a community that gave up is back within 10 s, then respawns double to at most 30 s apart, with jitter
  respawn: Object.freeze({ minMs: 2_000, maxMs: 30_000, jitter: 0.2 }),
})

export const DEFAULT_MAILBOX_CAPACITY = 10_000

export function resolvePolicy(partial: Partial<SupervisionPolicy> = {}): SupervisionPolicy {
  const policy = {
    ...defaultPolicy,
    ...partial,
    backoff: { ...defaultPolicy.backoff, ...partial.backoff },
    respawn: { ...defaultPolicy.respawn, ...partial.respawn },
  }
  const { backoff, respawn } = policy
  const counts = [policy.maxRestarts, policy.stashCapacity]
  const durations = [
    policy.windowMs,
    policy.resetAfterMs,
    backoff.minMs,
    backoff.maxMs,
    backoff.jitter,
    respawn.minMs,
    respawn.maxMs,
    respawn.jitter,
  ]
  if (!counts.every((n) => Number.isInteger(n) && n >= 0) || !durations.every((n) => Number.isFinite(n) && n >= 0)) {
    throw new RangeError(`invalid supervision policy: ${JSON.stringify(policy)}`)
  }
  if (backoff.maxMs < backoff.minMs) throw new RangeError('backoff.maxMs must be >= backoff.minMs')
  if (respawn.maxMs < respawn.minMs) throw new RangeError('respawn.maxMs must be >= respawn.minMs')
  return policy
}

/** Sliding window of failure times: a failure counts while less than windowMs old. */
export class FailureWindow {
  private readonly times: number[] = []

  /** records a failure at now and returns how many fall in the window */
  record(now: number, windowMs: number, keep: number): number {
    this.times.push(now)
    while (this.times.length > 0 && (now - this.times[0]! >= windowMs || this.times.length > keep)) {
      this.times.shift()
    }
    return this.times.length
  }

  clear(): void {
    this.times.length = 0
  }
}
