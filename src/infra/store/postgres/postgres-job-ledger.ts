import { StoreError } from '../event-store.js'
// Extension needed: plain JS shared with the SQLite writer thread, which runs without a TypeScript loader.
import { JOB_COLUMNS, OPEN_STATES_SQL, toJobRow } from '../job-fence.mjs'
import type { JobLedger } from '../job-ledger.js'
import { FencedError } from '../session-fence.js'
import { type Sql, withDeadline } from './postgres-schema.js'
import { runFenced } from './postgres-session-fence.js'

/**
 * The jobs table of the cluster store (job-ledger.ts), on the commits' pool: an assignment is one conditional
 * UPDATE, whose row lock orders it with a batch deciding a report on the same job (postgres-job-writes.ts), and
 * of two with the same `expected` the second finds the generation moved on. The reads are primary-key or
 * open-index lookups, and rare (a dispatcher's start, a stale assignment): not worth the read pool's budget.
 * With the mesh an assignment also claims the capability's session first (postgres-session-fence.ts): an owner
 * that lost its session cannot assign once its successor has.
 */

/** Exported for the query-plan test. */
export const JOB_LEDGER_SQL = {
  // an assignee takes the job (attempts + 1); none puts it back in the queue; either way the generation moves on,
  // so whatever the previous assignee still sends is fenced
  ASSIGN: `UPDATE jobs SET generation = generation + 1, assignee = $4::text,
    state = CASE WHEN $4::text IS NULL THEN 'queued' ELSE 'assigned' END,
    attempts = attempts + CASE WHEN $4::text IS NULL THEN 0 ELSE 1 END
    WHERE community = $1 AND id = $2 AND generation = $3 AND state IN ${OPEN_STATES_SQL} RETURNING generation, attempts`,
  JOB: `SELECT ${JOB_COLUMNS} FROM jobs WHERE community = $1 AND id = $2`,
  OPEN_JOBS: `SELECT ${JOB_COLUMNS} FROM jobs WHERE community = $1 AND capability = $2 AND state IN ${OPEN_STATES_SQL}
    ORDER BY queued_at_ms, id LIMIT $3`,
  OPEN_JOBS_AFTER: `SELECT ${JOB_COLUMNS} FROM jobs WHERE community = $1 AND capability = $2 AND state IN ${OPEN_STATES_SQL}
    AND (queued_at_ms, id) > ($4, $5) ORDER BY queued_at_ms, id LIMIT $3`,
  OPEN_CAPABILITIES: `SELECT DISTINCT capability FROM jobs WHERE community = $1 AND state IN ${OPEN_STATES_SQL}`,
} as const

/** `closed`: true once the store is closing, when every call is refused */
export function createPostgresJobLedger(sql: Sql, closed: () => boolean): JobLedger {
  async function call<T>(what: string, body: () => Promise<T>): Promise<T> {
    if (closed()) throw new StoreError('event store is closed')
    try {
      return await withDeadline(`event store ${what}`, body())
    } catch (cause) {
      if (cause instanceof FencedError) throw cause
      throw new StoreError(`event store ${what} failed`, { cause })
    }
  }
  const rowOf = async (community: string, job: string) => {
    const [row] = await sql.unsafe(JOB_LEDGER_SQL.JOB, [community, job], { prepare: true })
    return row === undefined ? undefined : toJobRow(row)
  }
  return {
    assign: (community, job, expected, assignee, fence) =>
      call('job assignment', async () => {
        const params = [community, job, expected, assignee]
        const update = (tx: Sql) => tx.unsafe(JOB_LEDGER_SQL.ASSIGN, params, { prepare: true })
        const [won] = fence === undefined ? await update(sql) : await runFenced(sql, fence, update)
        if (won !== undefined) return { status: 'assigned', generation: won.generation as number, attempts: won.attempts as number }
        // a statement of its own: it sees the assignment that won, which the UPDATE's snapshot may predate
        return { status: 'stale', row: await rowOf(community, job) }
      }),
    openJobs: (community, capability, limit, after) =>
      call('open jobs read', async () => {
        const rows =
          after === undefined
            ? await sql.unsafe(JOB_LEDGER_SQL.OPEN_JOBS, [community, capability, limit], { prepare: true })
            : await sql.unsafe(JOB_LEDGER_SQL.OPEN_JOBS_AFTER, [community, capability, limit, after.queuedAtMs, after.id], {
                prepare: true,
              })
        return rows.map(toJobRow)
      }),
    openCapabilities: (community) =>
      call('open capabilities read', async () =>
        (await sql.unsafe(JOB_LEDGER_SQL.OPEN_CAPABILITIES, [community], { prepare: true })).map((r) => r.capability as string),
      ),
    job: (community, job) => call('job read', () => rowOf(community, job)),
  }
}
