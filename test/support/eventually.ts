// Waiting for what a test cannot await as an event (another process, a network round trip, a metric, a row):
// poll it until it holds, and on timeout throw naming what was awaited and the last value seen, so a failure
// says how far things got. A probe that throws has not held yet; its error is the last thing seen.

export interface PollLimits {
  /** give up after this long; default 5 s */
  timeoutMs?: number
  /** pause between two probes; default 20 ms */
  intervalMs?: number
}

// Taken at import, before any test fakes timers: a poll must keep real time even while Date is faked.
const realSetTimeout = globalThis.setTimeout
const pause = (ms: number) => new Promise<void>((resolve) => realSetTimeout(resolve, ms))

/** Polls a synchronous `condition` until it is true. */
export function eventually(condition: () => boolean, what: string, limits?: PollLimits): Promise<void>
/** Polls `probe` until its value `holds`; resolves with that value. */
export function eventually<T>(probe: () => T | Promise<T>, holds: (value: T) => boolean, what: string, limits?: PollLimits): Promise<T>
export async function eventually<T>(
  probe: () => T | Promise<T>,
  holdsOrWhat: ((value: T) => boolean) | string,
  whatOrLimits?: string | PollLimits,
  maybeLimits?: PollLimits,
): Promise<T | undefined> {
  const sync = typeof holdsOrWhat === 'string'
  const holds = sync ? (v: T) => v === true : holdsOrWhat
  const what = sync ? holdsOrWhat : String(whatOrLimits)
  const { timeoutMs = 5_000, intervalMs = 20 } = (sync ? (whatOrLimits as PollLimits | undefined) : maybeLimits) ?? {}
  const deadline = performance.now() + timeoutMs
  let last: { value: T } | { error: unknown } | undefined
  for (;;) {
    try {
      const value = await probe()
      if (holds(value)) return sync ? undefined : value
      last = { value }
    } catch (error) {
      last = { error }
    }
    if (performance.now() >= deadline) throw timedOut(what, timeoutMs, last)
    await pause(intervalMs)
  }
}

function timedOut(what: string, timeoutMs: number, last: { value: unknown } | { error: unknown } | undefined): Error {
  const seen = !last ? 'nothing' : 'error' in last ? `an error: ${String(last.error)}` : describe(last.value)
  return new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last seen ${seen}`, {
    cause: last && 'error' in last ? last.error : undefined,
  })
}

/** JSON, with sets and maps as arrays, cut short: enough to see how far things got. */
function describe(value: unknown): string {
  const json = JSON.stringify(value, (_key, v: unknown) => (v instanceof Set ? [...v] : v instanceof Map ? [...v] : v))
  const text = json ?? String(value)
  return text.length > 600 ? `${text.slice(0, 600)}…` : text
}
