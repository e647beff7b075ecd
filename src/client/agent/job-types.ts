// The shapes of dispatched jobs as an agent program sees them, both sides: what serve() hands a handler, and
// what request() returns. Their own module because the serving and the requesting parts and the client share them.
import type { NostrEvent } from '../../protocols/nip01/event.js'

/** A job assigned to this agent. */
export interface ServedJob {
  /** the request's event id */
  id: string
  capability: string
  /** the request's first `i` tag value, else its content */
  input: string
  request: NostrEvent
  /** the request's author, to whom the answers go */
  requester: string
  /** the assignment's generation: the relay refuses what a superseded assignee still sends */
  generation: number
}

/** What a handler can do while it runs. */
export interface JobContext {
  /** NIP-90 `partial` feedback: `info` in the status tag, `content` optional */
  progress(info: string, content?: string): Promise<void>
  /**
   * One piece of a streamed answer, sent in call order once the earlier ones were answered; resolves at the
   * relay's OK. Rejects with the signal's reason once it fired, and with JobError `refused` on another refusal.
   */
  stream(chunk: string): Promise<void>
  /**
   * Fires when the job is no longer this agent's: revoked, superseded (the relay refused one of its events
   * `restricted:`), the connection was lost, or the agent stops. Its reason is a JobError.
   */
  readonly signal: AbortSignal
}

/** Resolves with the output: a string as it is, anything else JSON-encoded. Throw RetryableJobError to pass the job on. */
export type JobHandler = (job: ServedJob, ctx: JobContext) => unknown

export interface ServeOptions {
  /** how many jobs of this capability run at once; more are refused with a retry error (default 1) */
  concurrency?: number
  /** NIP-89 `k` kinds announced for a capability that is not in the client's options (default none) */
  kinds?: number[]
  description?: string
}

export interface RequestOptions {
  /** how long the relay still tries after queueing it (`deadline_ms`); the call also rejects `deadline` 5 s past it */
  deadlineMs?: number
  /** the request's kind, 5000–5999 (default 5000); the result comes as kind + 1000 */
  kind?: number
  /** more tags for the request (NIP-90 `param`, `relays` ...) */
  tags?: string[][]
}

/** The final answer of a job: the result event, its content, and its author. */
export interface JobResult {
  content: string
  event: NostrEvent
  /** the agent that answered */
  agent: string
}

/** One piece of a streamed answer; a higher `generation` restarts the stream from `seq` 0 (the job went to another agent). */
export interface JobChunk {
  data: string
  seq: number
  generation: number
}

/** A job request under way: a promise of its result that rejects with JobError. */
export type JobCall = Promise<JobResult> & {
  /** the request's event id */
  readonly id: string
  /** the streamed pieces in order, without duplicates; ends when the call settles */
  readonly chunks: AsyncIterable<JobChunk>
  /** deletes the request (NIP-09); the call rejects `cancelled` at once */
  cancel(): Promise<void>
}
