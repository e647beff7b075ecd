// The agent client's only sources of time and chance, injected so backoff, leases and throttles can be tested
// with a simulated clock instead of sleeps.

export type TimerHandle = { readonly __timer: unique symbol }

export interface AgentClock {
  /** unix milliseconds */
  now(): number
  setTimeout(fn: () => void, ms: number): TimerHandle
  clearTimeout(handle: TimerHandle): void
}

/** uniform in [0, 1) */
export type RandomSource = () => number

export const systemClock: AgentClock = {
  now: () => Date.now(),
  // not unref'd: while the relay is down, the reconnect timer is all that keeps an agent's program alive
  // (stop() clears every timer, so a stopped agent holds nothing)
  setTimeout: (fn, ms) => setTimeout(fn, ms) as unknown as TimerHandle,
  clearTimeout: (h) => clearTimeout(h as unknown as ReturnType<typeof setTimeout>),
}
