// The jobs table's rules (job-ledger.ts), shared by both stores: which report or relay close a job still takes
// (the fence), what it does to the job's state, and the row as the port returns it. Plain .mjs so the SQLite
// writer thread, which runs without a TypeScript loader, decides with the same code as PostgreSQL.

/**
 * The open states as SQL. SQLite uses a partial index only for a query whose WHERE repeats the index's own
 * condition, so the index and every statement on open rows use this one text.
 */
export const OPEN_STATES_SQL = "('queued', 'assigned', 'running')"

/** SELECT list of a whole row, in the shape toJobRow reads */
export const JOB_COLUMNS = 'id, capability, requester, kind, state, generation, assignee, attempts, queued_at_ms, deadline_at_ms'

const FINAL = new Set(['success', 'error', 'cancelled'])

/**
 * Why `job` (a report from `author`, or the relay's close) may not be stored against `row` (state, generation,
 * assignee; undefined: no row), or undefined when it may. A report about a job with no row is not about a
 * dispatched job and is stored as is; a close needs an open row.
 */
export function fenceOf(row, job, author) {
  const name = `job ${job.job.slice(0, 12)}`
  if (row === undefined) return job.op === 'close' ? `${name}: it is not a dispatched job` : undefined
  if (FINAL.has(row.state)) return `${name}: it has ended (${row.state})`
  // a report without a generation comes from a plain NIP-90 provider, never from an assignee
  if (job.generation !== row.generation) return `${name}: superseded: the job is at generation ${row.generation}`
  if (job.op === 'report' && author !== row.assignee) return `${name}: not its assignee`
  // NIP-90: a result's kind is its request's + 1000; a requester waits for that kind alone
  if (job.op === 'report' && job.resultKind !== undefined && job.resultKind !== row.kind + 1000)
    return `${name}: its result is of kind ${row.kind + 1000}`
  return undefined
}

/** The state a job moves to once `job`, past its fence, is stored. */
export function stateAfter(row, job) {
  if (job.op === 'close') return 'error'
  if (job.ends !== null) return job.ends
  return job.accepts && row.state === 'assigned' ? 'running' : row.state
}

/** A row selected with JOB_COLUMNS, as the port returns it. */
export function toJobRow(r) {
  return {
    id: r.id,
    capability: r.capability,
    requester: r.requester,
    kind: r.kind,
    state: r.state,
    generation: r.generation,
    assignee: r.assignee,
    attempts: r.attempts,
    queuedAtMs: r.queued_at_ms,
    deadlineAtMs: r.deadline_at_ms,
  }
}
