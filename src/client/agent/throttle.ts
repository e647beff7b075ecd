// Outbound throttles per global / channel (`h` tag) / recipient (`p` tag) that make a publish wait rather than
// be refused by the relay. GCRA (the algorithm the relay's own admission uses, docs/architecture.md §8): each key holds a
// theoretical arrival time; a publish reserves its slot on every key at once, so waiters keep their order.

import { isJobResultKind, KIND_JOB_CHUNK, KIND_JOB_FEEDBACK, TAG_GENERATION } from '../../protocols/jobs.js'

/** feedback, a result or a chunk under an assignment's generation (docs/jobs.md) */
const isJobAnswer = (e: { kind: number; tags: readonly string[][] }): boolean =>
  (e.kind === KIND_JOB_FEEDBACK || e.kind === KIND_JOB_CHUNK || isJobResultKind(e.kind)) && e.tags.some((t) => t[0] === TAG_GENERATION)

export interface RateRule {
  ratePerSecond: number
  burst: number
}

export interface ThrottleRules {
  global: RateRule
  perChannel: RateRule
  perRecipient: RateRule
}

export type ThrottleDecision = { ok: true; waitMs: number } | { ok: false; retryAfterMs: number }

export class OutboundThrottle {
  private readonly tat = new Map<string, number>()

  constructor(private readonly rules: ThrottleRules) {}

  /**
   * Reserves a slot on every key the event touches when the wait fits in `maxWaitMs` (and then the caller
   * must wait `waitMs`); otherwise reserves nothing and says how long until it would fit.
   */
  reserve(event: { kind: number; tags: readonly string[][] }, nowMs: number, maxWaitMs: number): ThrottleDecision {
    const keys = this.keysOf(event)
    let waitMs = 0
    for (const [key, rule] of keys) waitMs = Math.max(waitMs, this.waitFor(key, rule, nowMs))
    if (waitMs > maxWaitMs) return { ok: false, retryAfterMs: Math.ceil(waitMs) }
    for (const [key, rule] of keys) {
      const interval = 1000 / rule.ratePerSecond
      this.tat.set(key, Math.max(this.tat.get(key) ?? nowMs, nowMs) + interval)
    }
    this.forgetIdle(nowMs)
    return { ok: true, waitMs }
  }

  private waitFor(key: string, rule: RateRule, nowMs: number): number {
    const interval = 1000 / rule.ratePerSecond
    const tolerance = interval * (rule.burst - 1)
    const tat = Math.max(this.tat.get(key) ?? nowMs, nowMs)
    return Math.max(0, tat - tolerance - nowMs)
  }

  private keysOf(event: { kind: number; tags: readonly string[][] }): [string, RateRule][] {
    const keys: [string, RateRule][] = [['global', this.rules.global]]
    // what an assignee sends about its job goes to the requester who asked for it: not a message it did not want
    const asked = isJobAnswer(event)
    for (const t of event.tags) {
      if (t[0] === 'h' && t[1] !== undefined) keys.push([`h:${t[1]}`, this.rules.perChannel])
      else if (t[0] === 'p' && t[1] !== undefined && !asked) keys.push([`p:${t[1]}`, this.rules.perRecipient])
    }
    return keys
  }

  // a key whose arrival time has passed is a full bucket: forgetting it changes nothing and bounds the map
  private forgetIdle(nowMs: number): void {
    if (this.tat.size < 1024) return
    for (const [key, tat] of this.tat) if (tat <= nowMs) this.tat.delete(key)
  }
}
