// A dispatcher's start (docs/jobs.md#recovery): the store is the truth, so the open jobs of its capability are
// read back with their requests, beside the actor. A job still held by the connection it was delivered to, at
// its stored generation, keeps it; any other assigned job goes to another agent under the next generation,
// which fences the one it had. (Not by pubkey: an agent that reconnected dropped the jobs of its old connection.)
import type { StoredEvent } from '../../infra/store/event-store.js'
import type { JobRow } from '../../infra/store/job-ledger.js'
import { REDELIVER } from '../community/messages.js'
import { pipeTo } from '../kernel/index.js'
import { pump, reassign } from './assignment.js'
import type { Ctx, DispatcherDeps, DispatcherState, JobEntry } from './dispatcher-state.js'
import { lostAnswer } from './holding.js'
import type { Holder } from './job-board.js'
import { closeJob } from './job-close.js'
import { onAgentGone, onCancelled, onReported, queueJob } from './job-end.js'
import type { DispatcherMsg } from './messages.js'

type Msg<T extends DispatcherMsg['type']> = Extract<DispatcherMsg, { type: T }>

/** open jobs per read of the jobs table */
const ROWS_PER_READ = 1_000
/** ids per read of the requests: one filter's list holds at most 1,000 values */
const IDS_PER_READ = 500

/** Every open job of the capability, page by page: more than the queue's bound may be open (it is checked before each commit). */
export async function readOpenRows(deps: DispatcherDeps): Promise<JobRow[]> {
  const rows: JobRow[] = []
  for (;;) {
    const page = await deps.store.jobs.openJobs(deps.community, deps.capability, ROWS_PER_READ, rows.at(-1))
    rows.push(...page)
    if (page.length < ROWS_PER_READ) break
  }
  return rows
}

/** The request events of `rows`, a filter's worth at a time. */
export async function readRequests(rows: readonly JobRow[], deps: DispatcherDeps): Promise<StoredEvent[]> {
  const requests: StoredEvent[] = []
  for (let i = 0; i < rows.length; i += IDS_PER_READ) {
    const ids = rows.slice(i, i + IDS_PER_READ).map((r) => r.id)
    requests.push(...(await deps.store.query(deps.community, [{ ids, limit: ids.length }], { now: Math.floor(deps.wallMs() / 1000) })))
  }
  return requests
}

/** Who holds each job of the capability now (DispatcherDeps.holders, or on one node the board's live connections). */
export function holdersNow(deps: DispatcherDeps): ReadonlyMap<string, Holder> {
  if (deps.holders) return deps.holders()
  const live = new Set(deps.candidates().map((c) => c.conn))
  const out = new Map<string, Holder>()
  for (const [job, holder] of deps.board.holdsOf(deps.capability)) if (live.has(holder.conn)) out.set(job, holder)
  return out
}

export function startRebuild(ctx: Ctx, deps: DispatcherDeps): void {
  const read = async () => {
    const rows = await readOpenRows(deps)
    return { rows, requests: await readRequests(rows, deps) }
  }
  pipeTo(ctx.self, read(), (outcome): DispatcherMsg => ({ type: 'Rebuilt', outcome }), {
    ...REDELIVER,
    onGiveUp: () => lostAnswer(deps, '', 'open jobs read at start'),
  })
}

export function onRebuilt(state: DispatcherState, msg: Msg<'Rebuilt'>, ctx: Ctx, deps: DispatcherDeps): DispatcherState {
  // a store outage: supervision restarts the dispatcher, whose init reads again
  if (!msg.outcome.ok) throw msg.outcome.error
  const { rows, requests } = msg.outcome.value
  const raws = new Map(requests.map((r) => [r.id, r.raw]))
  const holders = holdersNow(deps)
  state.ready = true
  // what the board held for this capability is replaced in this one step: the community never sees it empty
  deps.board.forget(deps.capability)
  const orphans = rows.flatMap((row) => restore(state, row, raws.get(row.id), holders, ctx, deps) ?? [])
  handOn(state, orphans, ctx, deps)
  for (const job of state.early.splice(0)) queueJob(state, job, deps)
  for (const early of state.earlyReports.splice(0)) {
    if (early.type === 'Reported') onReported(state, early, ctx, deps)
    else if (early.type === 'Cancelled') onCancelled(state, early, ctx, deps)
    else onAgentGone(state, early, ctx, deps)
  }
  pump(state, ctx, deps)
  return state
}

/** The jobs restore() found no holder for, to other agents: after every row, so each agent's held count is whole. */
export function handOn(state: DispatcherState, orphans: JobEntry[], ctx: Ctx, deps: DispatcherDeps): void {
  for (const entry of orphans) reassign(state, entry, 'its agent is gone since the dispatcher started', ctx, deps)
}

/** One open job read back; returns it when no connection holds it any longer (the caller hands it on). */
export function restore(
  state: DispatcherState,
  row: JobRow,
  raw: string | undefined,
  holders: ReadonlyMap<string, Holder>,
  ctx: Ctx,
  deps: DispatcherDeps,
): JobEntry | undefined {
  const job = {
    id: row.id,
    requester: row.requester,
    kind: row.kind,
    raw: raw ?? '',
    queuedAtMs: row.queuedAtMs,
    deadlineAtMs: row.deadlineAtMs,
  }
  const entry = queueJob(state, job, deps, row.generation, row.attempts)
  if (entry === undefined) return
  if (raw === undefined) {
    // its request is gone (expired): nothing to hand an agent, and the requester is owed its one final answer
    entry.phase = 'running'
    closeJob(state, entry, 'unavailable', 'the job request is no longer stored', ctx, deps)
    return
  }
  if (row.state === 'queued' || row.assignee === null) return
  const held = holders.get(row.id)
  if (held === undefined || held.pubkey !== row.assignee || held.generation !== row.generation) {
    // no connection holds it at this generation: the job goes on without it (handOn); its revocation goes to
    // whichever connection holds it (no connection named: with the mesh, every node drops the hold it knows of)
    entry.phase = 'running'
    entry.holder = { conn: '', pubkey: row.assignee }
    return entry
  }
  const conn = held.conn
  entry.phase = row.state === 'running' ? 'running' : 'assigned'
  entry.holder = { conn, pubkey: row.assignee }
  state.held.set(conn, (state.held.get(conn) ?? 0) + 1)
  deps.board.hold(row.id, { conn, pubkey: row.assignee, generation: row.generation })
  if (entry.phase === 'assigned') entry.acceptByMs = deps.nowMs() + deps.limits.acceptTimeoutMs
}
