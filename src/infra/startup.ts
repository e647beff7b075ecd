// Start-up against backends that may not answer yet (a database still booting, Redis restarting beside us):
// each is retried with backoff until `deadlineMs`, every failed attempt logged with its cause; then start-up
// fails with one error naming the backend and the cause. A node never sits alive without listening.
import { scheduledDelayMs } from '../protocols/backoff.js'

/** A backend did not answer within the start-up timeout; `message` is the one line an operator reads. */
export class BackendUnavailableError extends Error {
  readonly code = 'APIARY_BACKEND_UNAVAILABLE'
  constructor(
    readonly backend: string,
    readonly target: string,
    readonly waitedMs: number,
    cause: unknown,
  ) {
    super(
      `${backend} at ${target}: ${rootMessage(cause)} (still failing after ${Math.round(waitedMs / 1000)}s of retries; startupTimeoutSeconds)`,
      { cause },
    )
    this.name = 'BackendUnavailableError'
  }
}

export interface StartupRetry {
  /** when the whole start-up must be done (ms since the epoch, the same clock as `now`) */
  deadlineMs: number
  log: { warn(o: object, m: string): void }
  now?: () => number
  sleep?: (ms: number) => Promise<void>
}

// A booting PostgreSQL or Redis answers within a second or two; doubling from 250 ms finds it soon after,
// and 5 s between attempts keeps a long wait from hammering a server that is coming up.
const STARTUP_BACKOFF = { minMs: 250, maxMs: 5_000, jitter: 0 }

/** `attempt` until it resolves, or throw BackendUnavailableError with the last cause at the deadline. */
export async function retryAtStartup<T>(backend: string, target: string, attempt: () => Promise<T>, r: StartupRetry): Promise<T> {
  const now = r.now ?? Date.now
  const sleep = r.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)))
  const started = now()
  for (let n = 1; ; n++) {
    try {
      return await attempt()
    } catch (cause) {
      const left = r.deadlineMs - now()
      if (left <= 0) throw new BackendUnavailableError(backend, target, now() - started, cause)
      const delayMs = Math.min(left, scheduledDelayMs(STARTUP_BACKOFF, n - 1))
      r.log.warn(
        { backend, target, attempt: n, cause: rootMessage(cause), retryInMs: delayMs },
        `${backend} unreachable at start; retrying`,
      )
      await sleep(delayMs)
    }
  }
}

/** The innermost message of an error chain (a StoreError wrapping the driver's ECONNREFUSED says the latter). */
export function rootMessage(error: unknown): string {
  let e = error
  for (let depth = 0; depth < 10 && e instanceof Error && e.cause !== undefined; depth++) e = e.cause
  // postgres.js and net report a refused dual-stack connect as an AggregateError with an empty message
  if (e instanceof AggregateError && !e.message && e.errors.length > 0) return rootMessage(e.errors[0])
  if (e instanceof Error) return e.message || String((e as { code?: unknown }).code ?? e.name)
  return String(e)
}

/** A connection URL without its password, for logs and error lines. */
export function redactUrl(url: string): string {
  if (url === '') return ''
  // redis+cluster://user:pw@h1:1,h2:2 is no WHATWG URL: only the userinfo is masked
  if (/^[a-z+]+:\/\/[^/@]*@/i.test(url) && url.includes(',')) return url.replace(/^([a-z+]+:\/\/[^:/@]*):[^@]*@/i, '$1:***@')
  try {
    const u = new URL(url)
    if (u.password) u.password = '***'
    return u.toString()
  } catch {
    return '<unparsable url>'
  }
}
