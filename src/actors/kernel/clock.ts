import type { Clock } from './types.js'

// Node fires a setTimeout longer than 2^31−1 ms after 1 ms (nact guards the same way: getSafeTimeout).
const MAX_TIMEOUT_MS = 2_147_483_647

/**
 * Monotonic: the crash window, backoff, reset-after-stable and idle stop measure elapsed time, which a wall
 * clock stepped by NTP (or by hand) would stretch or fold: a forward step would empty the crash window and
 * let a crash loop escape its budget; a backward one would keep old crashes counting.
 */
export const systemClock: Clock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, Math.min(MAX_TIMEOUT_MS, Math.max(0, ms))),
  clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout> | undefined),
}
