// The jobs this agent serves (docs/jobs.md): which capabilities it takes assignments for, with how many at
// once, and the assignments and revocations the relay sends its connection. An assignment is taken only from
// the relay's own key (NIP-11 `self`, when advertised); one this agent cannot take now (a capability it does not
// serve, or all its slots busy) is refused with a `retry` error, so the relay passes it on at once.
import type { JobErrorCode } from '../../protocols/jobs.js'
import type { NostrEvent } from '../../protocols/nip01/event.js'
import type { Announcer } from './announcer.js'
import { type PublishTemplate, RunningJob, toOutput } from './job-run.js'
import type { JobHandler, ServedJob, ServeOptions } from './job-types.js'
import { type Assignment, assignmentFilter, feedbackTemplate, inputOf, parseAssignment } from './job-wire.js'
import type { Capability } from './options.js'
import type { WireFilter } from './wire-filter.js'

export interface JobServerDeps {
  pubkey: string
  announcer: Announcer
  publish: PublishTemplate
  subscribe(filters: WireFilter[], onEvent: (event: NostrEvent) => void): () => void
  /** the community's key from the relay's NIP-11, once discovery read it */
  relaySelf(): string | undefined
  /** the announcement changed: sent now when the agent is ACTIVE (else with the next heartbeat or handshake) */
  reannounce(): void
}

interface Served {
  capability: Capability
  handler: JobHandler
  concurrency: number
  /** its jobs whose handler has not settled, aborted ones included: they hold a slot until it does */
  running: Set<RunningJob>
}

export class JobServer {
  private readonly served = new Map<string, Served>()
  /** by job id: the one generation of each job this agent runs */
  private readonly running = new Map<string, RunningJob>()
  /** the subscription to assignments, made at the first serve() and kept: a refusal beats an expired assignment */
  private subscribed = false

  constructor(private readonly deps: JobServerDeps) {}

  /** Throws RangeError for a concurrency that is not a positive integer, and Error for a capability served twice. */
  serve(name: string, handler: JobHandler, options: ServeOptions = {}): () => void {
    const concurrency = options.concurrency ?? 1
    if (!Number.isInteger(concurrency) || concurrency < 1)
      throw new RangeError(`concurrency must be a positive integer, not ${concurrency}`)
    if (this.served.has(name)) throw new Error(`${name} is already served: call the function serve() returned first`)
    const capability: Capability = {
      name,
      kinds: [...(options.kinds ?? [])],
      ...(options.description !== undefined && { description: options.description }),
    }
    const entry: Served = { capability, handler, concurrency, running: new Set() }
    this.served.set(name, entry)
    if (!this.subscribed) this.deps.subscribe([assignmentFilter(this.deps.pubkey)], (e) => this.onAssignment(e))
    this.subscribed = true
    this.announce()
    return () => {
      if (this.served.get(name) !== entry) return
      this.served.delete(name)
      this.announce()
    }
  }

  /** the connection was lost or the agent stops: no job of it is this agent's any longer */
  abortAll(code: JobErrorCode, message: string): void {
    for (const run of this.running.values()) run.abort(code, message)
  }

  private onAssignment(e: NostrEvent): void {
    const self = this.deps.relaySelf()
    if (self !== undefined && e.pubkey !== self) return
    const a = parseAssignment(e, this.deps.pubkey)
    if (a === undefined) return
    const current = this.running.get(a.job)
    if (a.status === 'revoked') {
      if (current?.job.generation === a.generation) current.abort(a.code, `the relay took the job back: ${a.code}`)
      return
    }
    if (current !== undefined) {
      if (current.job.generation >= a.generation) return
      current.abort('superseded', `the job was assigned again, as generation ${a.generation}`)
    }
    this.take(a)
  }

  private take(a: Assignment): void {
    const { request } = a
    const job: ServedJob = {
      id: a.job,
      capability: a.capability,
      input: inputOf(request),
      request,
      requester: request.pubkey,
      generation: a.generation,
    }
    const entry = this.served.get(a.capability)
    if (entry === undefined) {
      this.refuse(job, `this agent does not serve ${a.capability}`)
      return
    }
    if (entry.running.size >= entry.concurrency) {
      this.refuse(job, `${a.capability} is at its concurrency here (${entry.running.size} running)`)
      return
    }
    const run = new RunningJob(job, this.deps.publish)
    entry.running.add(run)
    this.running.set(job.id, run)
    void this.execute(entry, run, request.kind).finally(() => {
      entry.running.delete(run)
      if (this.running.get(job.id) === run) this.running.delete(job.id)
    })
  }

  private async execute(entry: Served, run: RunningJob, requestKind: number): Promise<void> {
    // revoked while the acceptance was on its way: the handler would only be aborted at once
    if (!(await run.accept()) || run.signal.aborted) return
    let output: string
    try {
      output = toOutput(await entry.handler(run.job, run.context()))
    } catch (error) {
      entry.running.delete(run)
      await run.fail(error)
      return
    }
    // the slot frees before the result leaves: the relay assigns the next job once it stored this result, and
    // that assignment can arrive with the result's OK, before this agent has read the OK
    entry.running.delete(run)
    await run.finish(output, requestKind)
  }

  /** a refusal passes the job on: the relay reassigns it without waiting for the assignment to expire */
  private refuse(job: ServedJob, message: string): void {
    void this.deps.publish(feedbackTemplate(job, ['error', message], { retry: true }))
  }

  private announce(): void {
    const served = [...this.served.values()]
    this.deps.announcer.setServed({
      capabilities: served.map((s) => s.capability),
      concurrency: served.length > 0 ? Object.fromEntries(served.map((s) => [s.capability.name, s.concurrency])) : undefined,
    })
    this.deps.reannounce()
  }
}
