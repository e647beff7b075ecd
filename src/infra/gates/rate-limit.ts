/**
 * Admission gate (architecture §8): GCRA, equivalent to a token bucket that refills `ratePerSecond` and holds at
 * most `burst` tokens. One atomic decision per call; the memory backend serves one node, the Redis backend
 * the whole cluster with the same algorithm.
 */
export interface RateRule {
  ratePerSecond: number
  burst: number
}

export type Admission = { allowed: true } | { allowed: false; retryAfterMs: number }

/**
 * Whose budget a request is charged to: a principal's in one community (a pubkey, or `ip:<address>` before
 * AUTH), or an IP's across the node's communities (connections, NIP-86 calls and AUTHs before their signature
 * is checked).
 */
export type Budget =
  | { community: string; principal: string; limit: 'events' | 'reqs' | 'api' }
  | { ip: string; limit: 'conn' | 'api' | 'auth' }

export interface RateLimiter {
  /**
   * This backend's key for `budget`, to pass to admit: the backend names its buckets, callers never spell key
   * names. Throws RangeError for a non-canonical id (a bug); every spelling of one IP is one key.
   */
  keyOf(budget: Budget): string
  /** Take `cost` tokens from `key` under `rule`. Rejects (throws GateError) only on backend failure. */
  admit(key: string, rule: RateRule, cost?: number): Promise<Admission>
  /** several decisions in one backend round trip (what a principal does with requests that queued up) */
  admitMany?(requests: readonly { key: string; rule: RateRule; cost?: number }[]): Promise<Admission[]>
  close(): Promise<void>
}

/**
 * A request costing more than `burst` can never be admitted: the bucket never holds that many tokens.
 * It is refused with this delay so callers can tell "never" from "later" (`Number.isFinite`) and answer
 * `rate-limited: request exceeds burst` instead of promising a retry that would fail again.
 */
export const neverAdmissibleMs = Number.POSITIVE_INFINITY

// Rules come from config and costs from our own code: a bad one is a bug, not something a client did.
// Shared by every backend so that they refuse exactly the same misuse.
export function checkRateRule(rule: RateRule, cost: number): void {
  if (!(rule.ratePerSecond > 0 && Number.isFinite(rule.ratePerSecond))) {
    throw new RangeError(`ratePerSecond must be a finite number > 0: ${rule.ratePerSecond}`)
  }
  if (!(rule.burst >= 1 && Number.isFinite(rule.burst))) throw new RangeError(`burst must be ≥ 1: ${rule.burst}`)
  if (!(cost >= 0 && Number.isFinite(cost))) throw new RangeError(`cost must be a finite number ≥ 0: ${cost}`)
}

export class GateError extends Error {
  readonly code = 'APIARY_GATE_UNAVAILABLE'
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'GateError'
  }
}
