import type { Clock } from './types.js'

// Node fires a setTimeout longer than 2^31−1 ms after 1 ms (nact guards the same way: getSafeTimeout).
const MAX_TIMEOUT_MS = 2_147_483_647

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, Math.min(MAX_TIMEOUT_MS, Math.max(0, ms))),
  clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout> | undefined),
}
