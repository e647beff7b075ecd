// One job this agent accepted, from its `processing` feedback to its result or error: the handler's context,
// the order of what it sends (feedback, chunks and the result leave one after another, each after the relay's
// answer to the one before), and its abort signal. Nothing is sent once the signal fired, and a `restricted:`
// refusal of anything it sends fires it: the relay has given the job to another generation.
import type { JobErrorCode } from '../../protocols/jobs.js'
import type { EventTemplate } from '../../protocols/nip01/sign.js'
import { prefixOf } from '../../protocols/reasons.js'
import { JobError, RetryableJobError } from './job-error.js'
import type { JobContext, ServedJob } from './job-types.js'
import { chunkTemplate, feedbackTemplate, resultTemplate } from './job-wire.js'
import type { PublishResult } from './publisher.js'

export type PublishTemplate = (t: EventTemplate) => Promise<PublishResult>

/** A handler's value as the result's content: a string as it is, anything else as JSON (throws what JSON throws). */
export const toOutput = (value: unknown): string => (typeof value === 'string' ? value : (JSON.stringify(value) ?? ''))

export class RunningJob {
  private readonly controller = new AbortController()
  private nextSeq = 0
  /** the last send under way: the next one waits for it */
  private tail: Promise<unknown> = Promise.resolve()

  constructor(
    readonly job: ServedJob,
    private readonly publish: PublishTemplate,
  ) {}

  get signal(): AbortSignal {
    return this.controller.signal
  }

  abort(code: JobErrorCode, message: string): void {
    if (!this.signal.aborted) this.controller.abort(new JobError(code, message))
  }

  /** sends `processing`; false when the relay refused it (the job is not ours: the handler must not run) */
  async accept(): Promise<boolean> {
    try {
      await this.send(feedbackTemplate(this.job, ['processing']))
      return true
    } catch {
      return false
    }
  }

  context(): JobContext {
    return {
      signal: this.signal,
      progress: (info, content) => this.send(feedbackTemplate(this.job, ['partial', info], { content })),
      // a chunk the relay refused was not delivered: the next one takes its seq, so the requester sees no gap
      stream: (chunk) =>
        this.send(
          () => chunkTemplate(this.job, this.nextSeq, chunk),
          () => this.nextSeq++,
        ),
    }
  }

  async finish(output: string, requestKind: number): Promise<void> {
    await this.send(resultTemplate(this.job, requestKind, output)).catch(() => {})
  }

  /** the handler threw: error feedback, with `retry` for a RetryableJobError; nothing once the signal fired */
  async fail(error: unknown): Promise<void> {
    const message = error instanceof Error ? error.message : String(error)
    const retry = error instanceof RetryableJobError
    await this.send(feedbackTemplate(this.job, ['error', message || 'the handler failed'], { retry })).catch(() => {})
  }

  /**
   * After every earlier send; rejects with the signal's reason once it fired (before or because of this one),
   * and with JobError `refused` for another refusal. A publish held in the offline queue counts as sent: the
   * queue keeps its order, and losing the connection fires the signal anyway.
   */
  private send(template: EventTemplate | (() => EventTemplate), sent?: () => void): Promise<void> {
    const sending = this.tail.then(async () => {
      if (this.signal.aborted) throw this.signal.reason
      const r = await this.publish(typeof template === 'function' ? template() : template)
      if (r.ok || r.queued) {
        sent?.()
        return
      }
      if (prefixOf(r.reason) === 'restricted') this.abort('superseded', `the relay no longer takes this job from this agent: ${r.reason}`)
      if (this.signal.aborted) throw this.signal.reason
      throw new JobError('refused', `the relay refused an event of job ${this.job.id}: ${r.reason}`, { reason: r.reason })
    })
    // handled here, so a handler that does not await progress() or stream() cannot crash its program;
    // one that does still gets the rejection
    this.tail = sending.catch(() => {})
    return sending
  }
}
