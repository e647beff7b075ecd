// Handshake shaping (architecture §6.2): at most limits.maxConcurrentAuth AUTH verifications in flight on one node.
// A reconnect storm then spreads out (each refused client retries after a jittered delay) instead of queueing
// without bound in front of the gate and the ban lookup, where every AUTH would wait behind all the others.

export interface AuthSlots {
  /** a place for one AUTH's preparation, or false when all are taken; `release()` once it is prepared */
  take(): boolean
  release(): void
  readonly inFlight: number
}

export function createAuthSlots(max: number): AuthSlots {
  if (!Number.isInteger(max) || max < 1) throw new RangeError(`maxConcurrentAuth must be an integer ≥ 1: ${max}`)
  let inFlight = 0
  return {
    take() {
      if (inFlight >= max) return false
      inFlight++
      return true
    },
    release() {
      inFlight = Math.max(0, inFlight - 1)
    },
    get inFlight() {
      return inFlight
    },
  }
}

/** Whole seconds in [1, 5], uniform: clients refused together come back spread over four seconds. */
export const shapedRetrySeconds = (random: () => number = Math.random): number => 1 + Math.min(4, Math.floor(random() * 5))
