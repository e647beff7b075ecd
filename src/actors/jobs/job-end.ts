// How a dispatched job moves after its assignment (docs/jobs.md#states): queued, its agent's reports (accepted,
// failed, finished), cancellation, its agent leaving, the timer's accept and job deadlines, and the answer to
// the relay's own terminal error.
import { pump, reassign, rest } from './assignment.js'
import type { Ctx, DispatcherDeps, DispatcherState, JobEntry } from './dispatcher-state.js'
import { revoke } from './holding.js'
import { closeJob, endJob } from './job-close.js'
import type { DispatcherMsg, QueuedJob } from './messages.js'

type Msg<T extends DispatcherMsg['type']> = Extract<DispatcherMsg, { type: T }>

export function onEnqueued(state: DispatcherState, msg: Msg<'Enqueued'>, ctx: Ctx, deps: DispatcherDeps): DispatcherState {
  if (!state.ready) {
    state.early.push(msg.job)
    return state
  }
  queueJob(state, msg.job, deps)
  pump(state, ctx, deps)
  return state
}

/** A stored job joins the queue (once: a rebuild may have read it already). */
export function queueJob(state: DispatcherState, job: QueuedJob, deps: DispatcherDeps, generation = 0, attempts = 0): JobEntry | undefined {
  if (state.jobs.has(job.id)) return undefined
  const entry: JobEntry = { job, generation, attempts, phase: 'queued', waitingSinceMs: deps.nowMs(), excluded: new Set() }
  state.jobs.set(job.id, entry)
  state.queue.push(job.id)
  deps.board.add(job.id, deps.capability, job.requester)
  return entry
}

export function onReported(state: DispatcherState, msg: Msg<'Reported'>, ctx: Ctx, deps: DispatcherDeps): DispatcherState {
  // before the open jobs were read back: heard once they are (the store may have decided it after that read)
  if (!state.ready) {
    state.earlyReports.push(msg)
    return state
  }
  const { report, pubkey } = msg
  const entry = state.jobs.get(report.job)
  // the store checked the generation; one this dispatcher has moved past is news of an assignment it replaced
  if (entry === undefined || report.generation !== entry.generation) return state
  switch (report.what) {
    case 'processing':
      if (entry.phase === 'assigned' && entry.holder?.pubkey === pubkey) {
        entry.phase = 'running'
        entry.acceptByMs = undefined
      }
      return state
    case 'result':
      endJob(state, entry, 'success', deps)
      pump(state, ctx, deps)
      return state
    case 'error':
      // from the assignee it has now: a retry heard while the job is already being handed on or closed changes nothing
      if (report.retry) {
        if ((entry.phase === 'assigned' || entry.phase === 'running') && entry.holder?.pubkey === pubkey) {
          rest(state, entry.holder.conn, deps)
          reassign(state, entry, 'its agent refused it or failed it retryably', ctx, deps)
        }
      } else {
        endJob(state, entry, 'error', deps)
        pump(state, ctx, deps)
      }
      return state
    default:
      return state
  }
}

export function onCancelled(state: DispatcherState, msg: Msg<'Cancelled'>, ctx: Ctx, deps: DispatcherDeps): DispatcherState {
  if (!state.ready) {
    state.earlyReports.push(msg)
    return state
  }
  for (const id of msg.jobs) {
    const entry = state.jobs.get(id)
    if (entry === undefined) continue
    if (entry.holder) revoke(entry, entry.holder, 'cancelled', deps)
    endJob(state, entry, 'cancelled', deps)
  }
  pump(state, ctx, deps)
  return state
}

export function onAgentGone(state: DispatcherState, msg: Msg<'AgentGone'>, ctx: Ctx, deps: DispatcherDeps): DispatcherState {
  // before the open jobs were read back: a job restored to this connection must still go elsewhere
  if (!state.ready) {
    state.earlyReports.push(msg)
    return state
  }
  for (const entry of [...state.jobs.values()]) {
    if (entry.holder?.conn !== msg.conn || (entry.phase !== 'assigned' && entry.phase !== 'running')) continue
    reassign(state, entry, msg.why === 'closed' ? 'its agent connection closed' : "its agent's lease lapsed", ctx, deps)
  }
  state.held.delete(msg.conn)
  state.lastAssignedMs.delete(msg.conn)
  return state
}

export function onUndelivered(state: DispatcherState, msg: Msg<'Undelivered'>, ctx: Ctx, deps: DispatcherDeps): DispatcherState {
  const entry = state.jobs.get(msg.job)
  if (entry?.phase !== 'assigned' || entry.holder?.conn !== msg.conn) return state
  rest(state, msg.conn, deps)
  reassign(state, entry, 'its assignment did not reach its agent', ctx, deps)
  return state
}

/** Accept deadlines and job deadlines, then whatever can go out now. */
export function onTick(state: DispatcherState, ctx: Ctx, deps: DispatcherDeps): DispatcherState {
  if (!state.ready) return state
  const now = deps.nowMs()
  const wall = deps.wallMs()
  for (const entry of [...state.jobs.values()]) {
    if (entry.phase === 'assigning' || entry.phase === 'closing') continue
    if (entry.phase === 'unclosed' && entry.closing) {
      closeJob(state, entry, entry.closing.code, entry.closing.text, ctx, deps)
      continue
    }
    const deadline = entry.job.deadlineAtMs
    if (deadline !== null && wall >= deadline) {
      if (entry.holder) revoke(entry, entry.holder, 'deadline', deps)
      closeJob(state, entry, 'deadline', 'the job passed its deadline', ctx, deps)
    } else if (entry.phase === 'assigned' && entry.acceptByMs !== undefined && now >= entry.acceptByMs) {
      reassign(state, entry, 'its agent did not accept in time', ctx, deps)
    }
  }
  pump(state, ctx, deps)
  return state
}

export function onClosed(state: DispatcherState, msg: Msg<'Closed'>, ctx: Ctx, deps: DispatcherDeps): DispatcherState {
  const entry = state.jobs.get(msg.job)
  // stored: the requester's one final answer, whatever this dispatcher did meanwhile
  if (msg.outcome.ok && msg.outcome.value.status === 'saved') deps.announce(JSON.parse(msg.event.raw), msg.event.raw)
  if (entry === undefined || entry.phase !== 'closing') {
    if (entry && msg.outcome.ok && msg.outcome.value.status === 'saved') {
      endJob(state, entry, msg.code, deps)
      pump(state, ctx, deps)
    }
    return state
  }
  if (!msg.outcome.ok) {
    deps.log.error({ err: msg.outcome.error, community: deps.community, job: msg.job }, "job's terminal error not stored; retrying")
    entry.phase = 'unclosed'
    return state
  }
  const outcome = msg.outcome.value
  // fenced: the job ended otherwise first (its result got in), and that is its one final answer
  endJob(state, entry, outcome.status === 'saved' ? msg.code : undefined, deps)
  pump(state, ctx, deps)
  return state
}
