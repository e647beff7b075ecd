// Exponential backoff with jitter, for the kernel's restarts and respawns, mesh dials, start-up retries and the
// clients' reconnects alike. Pure (the random draw comes in as `u`), so the kernel and src/client share it.
// Jitter only ever lengthens a wait: nothing retries earlier than the schedule promises.

export interface BackoffPolicy {
  minMs: number
  maxMs: number
  /** extra delay as a fraction of the scheduled one: `u · jitter` with u drawn from [0, 1] */
  jitter: number
}

// 2^52·minMs is finite; an uncapped exponent reaches Infinity, and 0·Infinity is NaN when minMs is 0.
const MAX_EXPONENT = 52

/** The schedule before retry `n` (0 for the first): min(maxMs, minMs·2^n). Never lengthened by jitter. */
export function scheduledDelayMs(policy: BackoffPolicy, n: number): number {
  return Math.min(policy.maxMs, policy.minMs * 2 ** Math.min(MAX_EXPONENT, Math.max(0, n)))
}

/**
 * The schedule lengthened by `u · jitter`, but never past maxMs: what a supervisor promises as its longest
 * wait (docs/architecture.md §4.4), so an actor at the cap restarts exactly every maxMs.
 */
export function cappedBackoffDelayMs(policy: BackoffPolicy, n: number, u: number): number {
  return Math.min(policy.maxMs, scheduledDelayMs(policy, n) * (1 + u * policy.jitter))
}

/**
 * The schedule lengthened by `u · jitter`, past maxMs too: many clients that lost one relay together keep
 * spreading their reconnects once they all reach the cap, instead of arriving in step every maxMs.
 */
export function spreadBackoffDelayMs(policy: BackoffPolicy, n: number, u: number): number {
  return scheduledDelayMs(policy, n) * (1 + u * policy.jitter)
}
