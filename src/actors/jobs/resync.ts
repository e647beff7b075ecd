// With the mesh, what other nodes tell a capability's owner travels as notes that can be lost (an owner that did
// not answer for a minute, a full outbox). So the owner's dispatcher reads its open jobs from the store now and
// then (docs/jobs.md#in-a-cluster): a job the store holds open that it never heard of joins as at a start, and a
// job it holds that the store ended (a report whose note was lost) ends here too. Reads beside the actor.
import type { StoredEvent } from '../../infra/store/event-store.js'
import type { JobRow } from '../../infra/store/job-ledger.js'
import { pipeTo } from '../kernel/index.js'
import { pump } from './assignment.js'
import type { Ctx, DispatcherDeps, DispatcherState } from './dispatcher-state.js'
import { endJob } from './job-close.js'
import type { DispatcherMsg } from './messages.js'
import { handOn, holdersNow, readOpenRows, readRequests, restore } from './rebuild.js'

type Msg<T extends DispatcherMsg['type']> = Extract<DispatcherMsg, { type: T }>

/** How often a dispatcher with the mesh reads its open jobs again. */
export const RESYNC_MS = 10_000

export function startResync(state: DispatcherState, ctx: Ctx, deps: DispatcherDeps): DispatcherState {
  if (!state.ready || state.resyncing) return state
  state.resyncing = true
  // the jobs known before the read: one heard of after it began may not be in what it reads
  const known = new Set(state.jobs.keys())
  const read = async (): Promise<{ rows: JobRow[]; requests: StoredEvent[]; known: Set<string> }> => {
    const rows = await readOpenRows(deps)
    const unknown = rows.filter((r) => !known.has(r.id))
    return { rows, requests: await readRequests(unknown, deps), known }
  }
  pipeTo(ctx.self, read(), (outcome): DispatcherMsg => ({ type: 'Resynced', outcome }), { everyMs: 500, forMs: 30_000 })
  return state
}

export function onResynced(state: DispatcherState, msg: Msg<'Resynced'>, ctx: Ctx, deps: DispatcherDeps): DispatcherState {
  state.resyncing = false
  if (!msg.outcome.ok) {
    deps.log.warn({ err: msg.outcome.error, community: deps.community, capability: deps.capability }, 'open jobs not read again')
    return state
  }
  const { rows, requests, known } = msg.outcome.value
  const open = new Set(rows.map((r) => r.id))
  const raws = new Map(requests.map((r) => [r.id, r.raw]))
  const holders = holdersNow(deps)
  const unknown = rows.filter((row) => !state.jobs.has(row.id) && raws.has(row.id))
  const orphans = unknown.flatMap((row) => restore(state, row, raws.get(row.id), holders, ctx, deps) ?? [])
  handOn(state, orphans, ctx, deps)
  for (const entry of [...state.jobs.values()]) {
    const settled = entry.phase === 'closing' || entry.phase === 'unclosed' || entry.phase === 'assigning'
    if (known.has(entry.job.id) && !open.has(entry.job.id) && !settled) endJob(state, entry, undefined, deps)
  }
  pump(state, ctx, deps)
  return state
}
