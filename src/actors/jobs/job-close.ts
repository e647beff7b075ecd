// How a dispatched job ends here: the relay's own terminal error, stored under the job's generation like any
// final answer (the store refuses it if the job ended first), and the bookkeeping once it is over.
import { type JobErrorCode, terminalErrorTemplate } from '../../protocols/jobs.js'
import { REDELIVER } from '../community/messages.js'
import { pipeTo } from '../kernel/index.js'
import type { Ctx, DispatcherDeps, DispatcherState, JobEntry } from './dispatcher-state.js'
import { lostAnswer, release } from './holding.js'
import type { DispatcherMsg } from './messages.js'

/** The relay's terminal error, stored under the job's generation (the store refuses it if the job ended first). */
export function closeJob(state: DispatcherState, entry: JobEntry, code: JobErrorCode, text: string, ctx: Ctx, deps: DispatcherDeps) {
  release(state, entry)
  deps.board.hold(entry.job.id, undefined)
  entry.phase = 'closing'
  entry.closing = { code, text }
  const event = deps.sign(
    terminalErrorTemplate({ job: entry.job.id, requester: entry.job.requester, generation: entry.generation, code, text }),
    Math.floor(deps.wallMs() / 1000),
  )
  const raw = JSON.stringify(event)
  const saved = deps.store.save(deps.community, event as Parameters<DispatcherDeps['store']['save']>[1], raw, {
    op: 'close',
    job: entry.job.id,
    generation: entry.generation,
  })
  pipeTo(ctx.self, saved, (outcome): DispatcherMsg => ({ type: 'Closed', job: entry.job.id, code, event: { raw }, outcome }), {
    ...REDELIVER,
    onGiveUp: () => lostAnswer(deps, entry.job.id, 'terminal error'),
  })
}

/** The job is over here; its agent has room again (the caller pumps). `outcome` undefined: ended elsewhere, not counted here. */
export function endJob(state: DispatcherState, entry: JobEntry, outcome: string | undefined, deps: DispatcherDeps): void {
  release(state, entry)
  state.jobs.delete(entry.job.id)
  deps.board.remove(entry.job.id)
  if (outcome !== undefined) deps.metrics.jobsEnded.inc({ outcome })
}
