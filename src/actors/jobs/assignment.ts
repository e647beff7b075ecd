// Handing jobs out (docs/jobs.md#assignment): the next queued job to the best live agent, its generation
// written to the store first (so the agent it replaces is fenced before the new one hears of it), then the
// relay-signed assignment sent to that one connection. No step awaits: each store call comes back as a message.
import { isOpenJobState } from '../../infra/store/job-ledger.js'
import { FencedError } from '../../infra/store/session-fence.js'
import { assignmentTemplate } from '../../protocols/jobs.js'
import { REDELIVER } from '../community/messages.js'
import { pipeTo } from '../kernel/index.js'
import { chooseAgent } from './agent-choice.js'
import type { Ctx, DispatcherDeps, DispatcherState, JobEntry } from './dispatcher-state.js'
import { lostAnswer, release, revoke } from './holding.js'
import { closeJob, endJob } from './job-close.js'
import type { DispatcherMsg } from './messages.js'

type Msg<T extends DispatcherMsg['type']> = Extract<DispatcherMsg, { type: T }>

/**
 * Queued jobs go out while some agent has room, oldest first. A job whose requester may be given none of the
 * agents with room (role domains) stays queued and the jobs behind it go first, up to MAX_PASSED a round.
 */
export function pump(state: DispatcherState, ctx: Ctx, deps: DispatcherDeps): void {
  if (!state.ready) return
  let candidates: ReturnType<DispatcherDeps['candidates']> | undefined
  const mayServe = state.queue.length > 0 ? deps.roleDomains?.() : undefined
  let passed = 0
  for (let i = 0; i < state.queue.length; ) {
    // with the mesh, nothing is handed out while the session's lease is not held
    if (deps.fence !== undefined && deps.fence() === undefined) return
    const entry = state.jobs.get(state.queue[i]!)
    if (entry?.phase !== 'queued') {
      state.queue.splice(i, 1)
      continue
    }
    candidates ??= candidatesPruned(state, deps)
    const allowed = allowedFor(entry, mayServe)
    // an agent that refused or failed this job gets it again only when no other has room
    const agent = chooseAgent(candidates, state, entry.excluded, allowed) ?? chooseAgent(candidates, state, NONE, allowed)
    if (agent === undefined) {
      // nobody has room: what is behind waits too; only agents this requester may not be given have room: the
      // jobs behind it go first
      if (allowed === undefined || chooseAgent(candidates, state, NONE) === undefined || ++passed > MAX_PASSED) return
      i++
      continue
    }
    state.queue.splice(i, 1)
    assignTo(state, entry, agent, ctx, deps)
  }
}

const NONE: ReadonlySet<string> = new Set()
/** queued jobs a pump passes over (no agent with room may be given them) before it waits for the next */
const MAX_PASSED = 1_000

/** Role domains: which agents this job's requester may be given; undefined when any may. */
function allowedFor(
  entry: JobEntry,
  mayServe: ((requester: string, agent: string) => boolean) | undefined,
): ((pubkey: string) => boolean) | undefined {
  return mayServe ? (pubkey) => mayServe(entry.job.requester, pubkey) : undefined
}

/** How long a connection that did not take an assignment, or refused one, gets no other. */
const REST_MS = 1_000

/** A connection that did not take or refused an assignment rests a while (REST_MS). */
export function rest(state: DispatcherState, conn: string, deps: DispatcherDeps): void {
  state.resting.set(conn, deps.nowMs() + REST_MS)
}

/** The candidates that may get a job now: none resting. */
function available(state: DispatcherState, deps: DispatcherDeps): ReturnType<DispatcherDeps['candidates']> {
  const candidates = deps.candidates()
  if (state.resting.size === 0) return candidates
  const now = deps.nowMs()
  for (const [conn, untilMs] of state.resting) if (untilMs <= now) state.resting.delete(conn)
  return state.resting.size === 0 ? candidates : candidates.filter((c) => !state.resting.has(c.conn))
}

/** The candidates now; who got a job last is forgotten for connections no longer among them (it would only grow). */
function candidatesPruned(state: DispatcherState, deps: DispatcherDeps): ReturnType<DispatcherDeps['candidates']> {
  const candidates = available(state, deps)
  if (state.lastAssignedMs.size > candidates.length) {
    const live = new Set(candidates.map((c) => c.conn))
    for (const conn of state.lastAssignedMs.keys()) if (!live.has(conn) && !state.held.has(conn)) state.lastAssignedMs.delete(conn)
  }
  return candidates
}

function assignTo(state: DispatcherState, entry: JobEntry, agent: { conn: string; pubkey: string }, ctx: Ctx, deps: DispatcherDeps) {
  entry.phase = 'assigning'
  entry.holder = { conn: agent.conn, pubkey: agent.pubkey }
  state.held.set(agent.conn, (state.held.get(agent.conn) ?? 0) + 1)
  state.lastAssignedMs.set(agent.conn, deps.nowMs())
  writeAssignment(state, entry, agent.conn, agent.pubkey, ctx, deps)
}

function writeAssignment(
  state: DispatcherState,
  entry: JobEntry,
  conn: string | null,
  pubkey: string | null,
  ctx: Ctx,
  deps: DispatcherDeps,
) {
  const job = entry.job.id
  const fence = deps.fence?.()
  if (deps.fence !== undefined && fence === undefined) {
    // the session's lease is not held now: back in the queue; a renewal lets pump() hand it out again, and a
    // lost session stops this dispatcher (the next owner reads the job back)
    requeue(state, entry, deps)
    return
  }
  pipeTo(
    ctx.self,
    deps.store.jobs.assign(deps.community, job, entry.generation, pubkey, fence),
    (outcome): DispatcherMsg => ({ type: 'Assigned', job, conn, pubkey, outcome }),
    { ...REDELIVER, onGiveUp: () => lostAnswer(deps, job, 'assignment') },
  )
}

export function onAssigned(state: DispatcherState, msg: Msg<'Assigned'>, ctx: Ctx, deps: DispatcherDeps): DispatcherState {
  const entry = state.jobs.get(msg.job)
  if (!msg.outcome.ok && msg.outcome.error instanceof FencedError) {
    // a newer owner of the capability's session wrote: nothing more is decided here
    deps.fenced?.()
    return state
  }
  if (!msg.outcome.ok) {
    deps.log.error({ err: msg.outcome.error, community: deps.community, job: msg.job }, 'job assignment not stored; retrying')
    if (entry?.phase === 'assigning' && (entry.holder?.conn ?? null) === msg.conn) requeue(state, entry, deps)
    return state
  }
  const outcome = msg.outcome.value
  // cancelled or ended meanwhile (its row decides), or an answer for an assignment since replaced by another
  if (entry === undefined || entry.phase !== 'assigning' || (entry.holder?.conn ?? null) !== msg.conn) return state
  if (outcome.status === 'stale') {
    release(state, entry)
    const row = outcome.row
    if (row === undefined || !isOpenJobState(row.state)) {
      endJob(state, entry, undefined, deps)
      pump(state, ctx, deps)
      return state
    }
    entry.generation = row.generation
    entry.attempts = row.attempts
    requeue(state, entry, deps)
    pump(state, ctx, deps)
    return state
  }
  entry.generation = outcome.generation
  entry.attempts = outcome.attempts
  if (msg.conn === null || msg.pubkey === null) {
    // back in the queue: whoever held it is fenced out now
    deps.board.hold(entry.job.id, undefined)
    requeue(state, entry, deps)
    pump(state, ctx, deps)
    return state
  }
  deps.board.hold(entry.job.id, { conn: msg.conn, pubkey: msg.pubkey, generation: entry.generation })
  const event = deps.sign(
    assignmentTemplate({
      job: entry.job.id,
      agent: msg.pubkey,
      capability: deps.capability,
      generation: entry.generation,
      acceptMs: deps.limits.acceptTimeoutMs,
      requestRaw: entry.job.raw,
    }),
    Math.floor(deps.wallMs() / 1000),
  )
  if (!deps.deliverTo(msg.conn, event, JSON.stringify(event))) {
    // it left, or stopped listening, between the choice and now
    rest(state, msg.conn, deps)
    reassign(state, entry, 'left before its assignment arrived', ctx, deps)
    return state
  }
  entry.phase = 'assigned'
  entry.acceptByMs = deps.nowMs() + deps.limits.acceptTimeoutMs
  deps.metrics.jobAssignments.inc({ attempt: entry.attempts > 1 ? 'again' : 'first' })
  deps.metrics.jobAssignmentSeconds.observe((deps.nowMs() - entry.waitingSinceMs) / 1000)
  return state
}

/**
 * Its agent left, lapsed, refused, failed it (retryably) or did not accept in time: to another agent under the
 * next generation (the store fences the one it had), or back to the queue, or, past maxAttempts, ended
 * `exhausted`. An agent still connected is told its assignment is revoked.
 */
export function reassign(state: DispatcherState, entry: JobEntry, why: string, ctx: Ctx, deps: DispatcherDeps): void {
  const previous = entry.holder
  release(state, entry)
  if (previous) {
    entry.excluded.add(previous.pubkey)
    revoke(entry, previous, 'superseded', deps)
  }
  deps.log.info({ community: deps.community, job: entry.job.id, generation: entry.generation, why }, 'job goes to another agent')
  if (entry.attempts >= deps.limits.maxAttempts) {
    closeJob(state, entry, 'exhausted', `no agent finished the job in ${entry.attempts} assignments`, ctx, deps)
    return
  }
  entry.waitingSinceMs = deps.nowMs()
  const agent = chooseAgent(available(state, deps), state, entry.excluded, allowedFor(entry, deps.roleDomains?.()))
  if (agent !== undefined) {
    assignTo(state, entry, agent, ctx, deps)
    return
  }
  // nobody else has room now: back to the queue under the next generation, which fences the one it had
  entry.phase = 'assigning'
  writeAssignment(state, entry, null, null, ctx, deps)
}

function requeue(state: DispatcherState, entry: JobEntry, deps: DispatcherDeps): void {
  release(state, entry)
  entry.phase = 'queued'
  entry.waitingSinceMs = deps.nowMs()
  // ahead of newer jobs: it was queued before them
  state.queue.unshift(entry.job.id)
}
