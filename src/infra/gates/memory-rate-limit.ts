// Admission for one node (docs/architecture.md §8): GCRA with one theoretical arrival time (TAT) per key, decided
// synchronously inside admit(), so two calls can never both take the last token.
//
// Derivation (T = 1000 / ratePerSecond ms per token, burst B, cost n): a request is a virtual arrival
// spaced nT after the later of the stored TAT and now, so newTat = max(TAT, now) + nT. A bucket holding
// B tokens lets TAT run at most B·T ahead of now, hence: admit iff newTat − now ≤ B·T, i.e. (TAT > now)
// now ≥ allowAt = TAT − τ + T·(n − 1) with tolerance τ = T·(B − 1). A bigger cost needs a *later* now
// (the + T·(n − 1)); retryAfterMs = allowAt − now, computed below as a duration. Refusals change nothing:
// a client knocking while limited is not pushed further back. No window, hence no 2× burst at its edges.
//
// A stored TAT at or before now means "bucket full", exactly like an absent key, so such entries can be
// dropped at any time without changing a decision; that is what keeps memory bounded.
import { memoryBudgetKey } from './memory-keys.js'
import { type Admission, checkRateRule, GateError, neverAdmissibleMs, type RateLimiter, type RateRule } from './rate-limit.js'

export interface MemoryRateLimiterOptions {
  /**
   * Clock in ms. Default performance.now(): monotonic, so an NTP step cannot block every key for the size
   * of the jump (wall-clock TATs would sit in the future) or hand out a fresh burst. Tests under vitest
   * fake timers (which leave `performance` alone) inject their own.
   */
  now?: () => number
  /**
   * Most keys held at once; default 100_000, so the heap the table takes stays bounded (83-char keys,
   * community:type:pubkey). Entries whose TAT has passed (full buckets) are dropped first. If every entry is
   * still live, a new key is refused (rate-limited until the earliest live entry refills) rather than one
   * being evicted: an evicted spent bucket would come back full, so a flood of fresh keys would hand its
   * sender a fresh burst for each key it had spent. Keys already held are decided as always.
   */
  maxKeys?: number
}

export interface MemoryRateLimiter extends RateLimiter {
  /** keys currently held (for tests and the metrics endpoint) */
  readonly size: number
  /** new keys refused because every held key was still live (the table full) */
  readonly refusedForRoom: number
}

// Float noise in TAT arithmetic is ~1e-10 ms; a nanosecond of slack keeps it from flipping exact-boundary
// decisions (a client arriving exactly one interval later) without admitting anything measurably early.
const floatSlackMs = 1e-6

// Entries examined at the front of the map per admission; two per admit outpaces one insertion per admit.
const trimPerAdmit = 2

// A table full of live keys is swept again at most this often: what a flood of new keys can cost.
const minSweepIntervalMs = 100

export function createMemoryRateLimiter(opts: MemoryRateLimiterOptions = {}): MemoryRateLimiter {
  const now = opts.now ?? (() => performance.now())
  const maxKeys = opts.maxKeys ?? 100_000
  if (!Number.isInteger(maxKeys) || maxKeys < 1) throw new RangeError(`maxKeys must be an integer ≥ 1: ${maxKeys}`)
  // key → TAT (ms on `now`'s clock). Insertion order is last-admission order (entries are re-inserted on
  // update), so the front holds the keys idle longest: the likeliest to have expired.
  const tats = new Map<string, number>()
  let closed = false
  // While full of live keys: until when a new key is refused without sweeping the table again, so a flood of
  // new keys costs O(1) each, not O(maxKeys).
  let fullUntil = Number.NEGATIVE_INFINITY
  let refusedForRoom = 0

  function decide(key: string, rule: RateRule, cost: number): Admission {
    checkRateRule(rule, cost)
    if (cost > rule.burst) return { allowed: false, retryAfterMs: neverAdmissibleMs }
    const t = now()
    const intervalMs = 1000 / rule.ratePerSecond
    const stored = tats.get(key)
    // Compared as durations, not as absolute times: (t + nT) − B·T loses the low bits of t when T is large
    // (0.001/s ⇒ T = 10⁶ ms) and would refuse a fresh key by a rounding error.
    const debtMs = stored !== undefined && stored > t ? stored - t : 0
    const waitMs = debtMs + cost * intervalMs - rule.burst * intervalMs
    // Rounded up (and at least 1 ms) so that retrying after exactly retryAfterMs is admitted.
    if (waitMs > floatSlackMs) return { allowed: false, retryAfterMs: Math.max(1, Math.ceil(waitMs - floatSlackMs)) }
    const newTat = t + debtMs + cost * intervalMs
    if (cost === 0) return { allowed: true }
    if (stored === undefined && tats.size >= maxKeys) {
      const waitForRoomMs = makeRoom(t)
      if (waitForRoomMs > 0) {
        refusedForRoom++
        return { allowed: false, retryAfterMs: Math.max(1, Math.ceil(waitForRoomMs)) }
      }
    }
    store(key, newTat, t)
    return { allowed: true }
  }

  function store(key: string, tat: number, t: number): void {
    tats.delete(key)
    tats.set(key, tat)
    let examined = 0
    for (const [k, v] of tats) {
      if (examined++ === trimPerAdmit || v > t) break
      tats.delete(k)
    }
  }

  // Runs only when the table is full: drops the full buckets, and returns 0 once there is room, else how long
  // until the earliest live entry refills (new keys wait that long; at least a sweep interval).
  function makeRoom(t: number): number {
    if (t < fullUntil) return fullUntil - t
    let earliest = Number.POSITIVE_INFINITY
    for (const [k, v] of tats) {
      if (v <= t) tats.delete(k)
      else if (v < earliest) earliest = v
    }
    if (tats.size < maxKeys) return 0
    fullUntil = Math.max(earliest, t + minSweepIntervalMs)
    return fullUntil - t
  }

  return {
    get size() {
      return tats.size
    },
    get refusedForRoom() {
      return refusedForRoom
    },
    keyOf: memoryBudgetKey,
    async admit(key, rule, cost = 1) {
      if (closed) throw new GateError('memory rate limiter is closed')
      return decide(key, rule, cost)
    },
    async close() {
      closed = true
      tats.clear()
    },
  }
}
