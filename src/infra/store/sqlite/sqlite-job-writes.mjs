// The jobs table's writes on SQLite (job-ledger.ts), made by sqlite-write-core.mjs inside the batch transaction
// that saves the events changing it, so a report is fenced where it would be stored and an assignment is
// batched with the saves on the one writer. Plain .mjs for the writer thread, as sqlite-write-core.mjs.
import { fenceOf, JOB_COLUMNS, OPEN_STATES_SQL, stateAfter, toJobRow } from '../job-fence.mjs'

/** Exported (through SAVE_SQL) for the query-plan test: each is a primary-key lookup. */
export const JOB_WRITE_SQL = {
  jobOf: 'SELECT state, generation, assignee, kind FROM jobs WHERE community = ? AND id = ?',
  insertJob: `INSERT INTO jobs (community, id, capability, requester, kind, state, generation, assignee, attempts, queued_at_ms,
    deadline_at_ms) VALUES (?, ?, ?, ?, ?, 'queued', 0, NULL, 0, ?, ?) ON CONFLICT DO NOTHING`,
  moveJob: 'UPDATE jobs SET state = ? WHERE community = ? AND id = ?',
  // an assignee takes the job (attempts + 1); none puts it back in the queue; either way the generation moves on,
  // so whatever the previous assignee still sends is fenced
  assignJob: `UPDATE jobs SET generation = generation + 1, assignee = ?,
    state = CASE WHEN ? IS NULL THEN 'queued' ELSE 'assigned' END, attempts = attempts + (? IS NOT NULL)
    WHERE community = ? AND id = ? AND generation = ? AND state IN ${OPEN_STATES_SQL} RETURNING generation, attempts`,
  wholeJob: `SELECT ${JOB_COLUMNS} FROM jobs WHERE community = ? AND id = ?`,
  // a removed request cancels its job; the new generation fences its assignee out
  cancelJob: `UPDATE jobs SET state = 'cancelled', generation = generation + 1
    WHERE community = ? AND id = ? AND state IN ${OPEN_STATES_SQL}`,
  cancelJobs: `UPDATE jobs SET state = 'cancelled', generation = generation + 1
    WHERE community = ? AND id IN (SELECT value FROM json_each(?)) AND state IN ${OPEN_STATES_SQL}`,
}

// what judgeJob answers for most events, which carry no report: no allocation per event
const NOTHING_TO_JUDGE = Object.freeze({ row: undefined })

/** A report's or close's fence, before its event is stored: a refusal, or the row it passed (undefined: none). */
export function judgeJob(s, plan) {
  const job = plan.job
  if (job === null || job.op === 'enqueue') return NOTHING_TO_JUDGE
  const row = s.jobOf.get(plan.community, job.job)
  const why = fenceOf(row, job, plan.pubkey)
  return why === undefined ? { row } : { refused: { status: 'fenced', why } }
}

/** What a stored event does to the jobs table: `row` is what judgeJob read, in this same transaction. */
export function recordJob(s, plan, row) {
  const job = plan.job
  if (job === null) return
  if (job.op === 'enqueue') {
    s.insertJob.run(plan.community, plan.id, job.capability, plan.pubkey, plan.kind, job.queuedAtMs, job.deadlineAtMs)
    return
  }
  if (row === undefined) return
  const state = stateAfter(row, job)
  if (state !== row.state) s.moveJob.run(state, plan.community, job.job)
}

/** JobLedger.assign: one conditional update; the row as it stands when it did not apply. */
export function assign(s, plan) {
  const { assignee } = plan
  const won = s.assignJob.get(assignee, assignee, assignee, plan.community, plan.job, plan.expected)
  if (won !== undefined) return { status: 'assigned', generation: won.generation, attempts: won.attempts }
  const row = s.wholeJob.get(plan.community, plan.job)
  return { status: 'stale', row: row === undefined ? undefined : toJobRow(row) }
}
