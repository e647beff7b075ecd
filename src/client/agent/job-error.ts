// The errors of dispatched jobs (docs/jobs.md). JobError is what a requester's call rejects with and what an
// assignee's ctx.signal carries as its reason; its `code` is the relay's one word for why (protocols/jobs.ts),
// or `refused` when the relay answered the request itself with OK false. RetryableJobError is what a handler
// throws to let another agent try the job.

import type { JobErrorCode } from '../../protocols/jobs.js'
import type { NostrEvent } from '../../protocols/nip01/event.js'

export class JobError extends Error {
  /** the relay's OK false reason, with its NIP-01 prefix, when `code` is `refused` */
  readonly reason: string | undefined
  /** the feedback event that ended the job, when one did */
  readonly event: NostrEvent | undefined

  constructor(
    readonly code: JobErrorCode | 'refused',
    message: string,
    options: { reason?: string; event?: NostrEvent; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'JobError'
    this.reason = options.reason
    this.event = options.event
  }
}

/** Thrown by a handler: the error feedback carries `retry`, and the relay hands the job to another agent. */
export class RetryableJobError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'RetryableJobError'
  }
}
