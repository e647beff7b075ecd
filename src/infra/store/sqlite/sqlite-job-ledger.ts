import type { Database } from 'better-sqlite3'
// Extension needed: plain JS shared with the writer thread, which runs without a TypeScript loader.
import { JOB_COLUMNS, OPEN_STATES_SQL, toJobRow } from '../job-fence.mjs'
import type { AssignOutcome, JobLedger } from '../job-ledger.js'
// Extension needed: as above.
import { type AssignPlan, SAVE_SQL } from './sqlite-write-core.mjs'

/**
 * The jobs table of the embedded store (job-ledger.ts). An assignment is a write: it goes through group commit to
 * the one writer, batched with the saves (sqlite-job-writes.mjs). The reads run on the main thread's connection:
 * they are primary-key or open-index lookups, and rare (a dispatcher's start, a stale assignment).
 */

/** Exported for the query-plan test. */
export const JOB_READ_SQL = {
  openJobs: `SELECT ${JOB_COLUMNS} FROM jobs WHERE community = ? AND capability = ? AND state IN ${OPEN_STATES_SQL}
    ORDER BY queued_at_ms, id LIMIT ?`,
  openJobsAfter: `SELECT ${JOB_COLUMNS} FROM jobs WHERE community = ? AND capability = ? AND state IN ${OPEN_STATES_SQL}
    AND (queued_at_ms, id) > (?, ?) ORDER BY queued_at_ms, id LIMIT ?`,
  openCapabilities: `SELECT DISTINCT capability FROM jobs WHERE community = ? AND state IN ${OPEN_STATES_SQL}`,
  // the statement the writer reads a stale assignment's row with
  job: SAVE_SQL.wholeJob,
} as const

export interface SqliteJobLedgerDeps {
  db: Database
  /** submits an assignment to the group commit */
  assign(plan: AssignPlan): Promise<AssignOutcome>
  /** the store's guard: refuses once closing, and turns a failure into StoreError */
  guarded<T>(what: string, body: () => T | Promise<T>): Promise<T>
}

export function createSqliteJobLedger({ db, assign, guarded }: SqliteJobLedgerDeps): JobLedger {
  const openJobs = db.prepare<[string, string, number], Record<string, unknown>>(JOB_READ_SQL.openJobs)
  const job = db.prepare<[string, string], Record<string, unknown>>(JOB_READ_SQL.job)
  const openJobsAfter = db.prepare<[string, string, number, string, number], Record<string, unknown>>(JOB_READ_SQL.openJobsAfter)
  const openCapabilities = db.prepare<[string], string>(JOB_READ_SQL.openCapabilities).pluck()
  return {
    assign: (community, id, expected, assignee) =>
      guarded('job assignment', () => assign({ type: 'assign', community, job: id, expected, assignee })),
    openJobs: (community, capability, limit, after) =>
      guarded('open jobs read', () =>
        (after === undefined
          ? openJobs.all(community, capability, limit)
          : openJobsAfter.all(community, capability, after.queuedAtMs, after.id, limit)
        ).map(toJobRow),
      ),
    openCapabilities: (community) => guarded('open capabilities read', () => openCapabilities.all(community)),
    job: (community, id) =>
      guarded('job read', () => {
        const row = job.get(community, id)
        return row === undefined ? undefined : toJobRow(row)
      }),
  }
}
