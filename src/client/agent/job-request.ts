// The jobs this agent asks for (docs/jobs.md): each call subscribes to its job's answers before the request
// leaves (REQ and EVENT travel one connection in order, so nothing can be missed), then waits for the one final
// answer: a result, an agent's error without `retry`, the relay's coded error, or a refusal of the request.
import { isJobRequestKind, KIND_JOB_REQUEST_MIN } from '../../protocols/jobs.js'
import type { NostrEvent } from '../../protocols/nip01/event.js'
import type { EventTemplate } from '../../protocols/nip01/sign.js'
import type { AgentClock, TimerHandle } from './clock.js'
import { ChunkStream } from './job-chunks.js'
import { JobError } from './job-error.js'
import type { JobCall, JobResult, RequestOptions } from './job-types.js'
import { answerFilter, answerOf, cancellationTemplate, requestTemplate } from './job-wire.js'
import type { PublishResult } from './publisher.js'
import type { WireFilter } from './wire-filter.js'

/** how long past its deadline a call still waits for the relay's own `deadline` error before it rejects by itself */
export const DEADLINE_GRACE_MS = 5000

export interface JobRequestsDeps {
  clock: AgentClock
  /** throws for a template that cannot be signed */
  sign(t: EventTemplate): NostrEvent
  send(event: NostrEvent): Promise<PublishResult>
  publish(t: EventTemplate): Promise<PublishResult>
  /** the answer a publish that was answered `queued` gets once it is sent after the reconnect */
  afterQueued(id: string, then: (r: PublishResult) => void): void
  subscribe(filters: WireFilter[], onEvent: (event: NostrEvent) => void, options: { onClosed: (reason: string) => void }): () => void
  relaySelf(): string | undefined
}

export class JobRequests {
  /** how each open call ends early (the agent stopped or closed) */
  private readonly open = new Set<(error: JobError) => void>()

  constructor(private readonly deps: JobRequestsDeps) {}

  /** Throws RangeError for a kind outside 5000–5999 or a deadline that is not a positive integer of milliseconds. */
  request(capability: string, input: string, options: RequestOptions = {}): JobCall {
    const kind = options.kind ?? KIND_JOB_REQUEST_MIN
    if (!Number.isInteger(kind) || !isJobRequestKind(kind)) throw new RangeError(`a job request's kind is 5000–5999, not ${kind}`)
    const { deadlineMs } = options
    if (deadlineMs !== undefined && !(Number.isInteger(deadlineMs) && deadlineMs > 0))
      throw new RangeError(`deadlineMs must be a positive integer, not ${deadlineMs}`)
    const request = this.deps.sign(requestTemplate(capability, input, kind, deadlineMs, options.tags))
    const call = new OpenCall(request, this.deps)
    this.open.add(call.fail)
    void call.settled.then(() => this.open.delete(call.fail))
    call.begin(deadlineMs)
    return call.toJobCall()
  }

  /** the agent stopped or closed: nothing will bring an answer to the calls still open */
  closeAll(message: string): void {
    for (const fail of [...this.open]) fail(new JobError('unavailable', message))
  }
}

/** One request under way, until its final answer. */
class OpenCall {
  readonly chunks = new ChunkStream()
  readonly result: Promise<JobResult>
  readonly settled: Promise<void>
  private resolve!: (r: JobResult) => void
  private reject!: (e: JobError) => void
  private done = false
  private unsubscribe: () => void = () => {}
  private deadline: TimerHandle | undefined
  private published: Promise<PublishResult> | undefined

  constructor(
    private readonly request: NostrEvent,
    private readonly deps: JobRequestsDeps,
  ) {
    this.result = new Promise<JobResult>((resolve, reject) => {
      this.resolve = resolve
      this.reject = reject
    })
    // also marks the result handled: a call whose chunks alone are read, or that was cancelled and dropped,
    // cannot crash its program with an unhandled rejection; whoever awaits it still gets the JobError
    this.settled = this.result.then(
      () => {},
      () => {},
    )
  }

  begin(deadlineMs: number | undefined): void {
    const { id, kind } = this.request
    // a relay that refuses the subscription (too many open on this connection) would leave the call deaf to its answer
    const onClosed = (reason: string) =>
      this.fail(new JobError('unavailable', `the relay closed the job's subscription: ${reason}`, { reason }))
    this.unsubscribe = this.deps.subscribe([answerFilter(id, kind)], (e) => this.onAnswer(e), { onClosed })
    this.published = this.deps.send(this.request)
    const refused = (r: PublishResult) => {
      if (!r.ok) this.fail(new JobError('refused', `the relay refused the job request: ${r.reason}`, { reason: r.reason }))
    }
    void this.published.then((r) => {
      // `queued`: not sent yet, and it will be, in order, after the reconnect; the relay's answer then counts
      if (!r.ok && r.queued) this.deps.afterQueued(id, refused)
      else refused(r)
    })
    if (deadlineMs !== undefined) {
      this.deadline = this.deps.clock.setTimeout(
        () => this.fail(new JobError('deadline', `no answer within ${deadlineMs} ms (and ${DEADLINE_GRACE_MS} ms more)`)),
        deadlineMs + DEADLINE_GRACE_MS,
      )
    }
  }

  readonly fail = (error: JobError): void => this.finish(error)

  toJobCall(): JobCall {
    return Object.assign(this.result, { id: this.request.id, chunks: this.chunks, cancel: () => this.cancel() })
  }

  private async cancel(): Promise<void> {
    if (this.done) return
    this.fail(new JobError('cancelled', 'cancelled by the requester'))
    const r = await this.published
    // a request the relay never took needs no deletion
    if (r && !r.ok && !r.queued) return
    await this.deps.publish(cancellationTemplate(this.request.id, this.request.kind))
  }

  private onAnswer(e: NostrEvent): void {
    const a = answerOf(e, this.request.id, this.request.kind, this.deps.relaySelf())
    if (a === undefined || this.done) return
    if (a.what === 'chunk') this.chunks.push(a.generation, a.seq, a.data)
    else if (a.what === 'result') this.finish({ content: e.content, event: e, agent: e.pubkey })
    else this.finish(new JobError(a.code, a.message, { event: e }))
  }

  private finish(outcome: JobResult | JobError): void {
    if (this.done) return
    this.done = true
    this.unsubscribe()
    if (this.deadline !== undefined) this.deps.clock.clearTimeout(this.deadline)
    this.chunks.end()
    if (outcome instanceof JobError) this.reject(outcome)
    else this.resolve(outcome)
  }
}
