/**
 * Admission gate (DESIGN §6): GCRA, equivalent to a token bucket that refills `ratePerSecond` and holds at
 * most `burst` tokens. One atomic decision per call; the memory backend serves one node, the Redis backend
 * (cluster issue) the whole cluster with the same algorithm.
 */
export interface RateRule {
  ratePerSecond: number
  burst: number
}

export type Admission = { allowed: true } | { allowed: false; retryAfterMs: number }

export interface RateLimiter {
  /** Take `cost` tokens from `key` under `rule`. Rejects (throws GateError) only on backend failure. */
  admit(key: string, rule: RateRule, cost?: number): Promise<Admission>
  close(): Promise<void>
}

export class GateError extends Error {
  readonly code = 'APIARY_GATE_UNAVAILABLE'
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'GateError'
  }
}
