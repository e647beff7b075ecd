import type { SaveOutcome } from '../event-store.js'
// Extension needed: plain JS shared with the SQLite writer thread, which runs without a TypeScript loader.
import { fenceOf, OPEN_STATES_SQL, stateAfter } from '../job-fence.mjs'
import type { JobState, JobWrite } from '../job-ledger.js'
import { idLockKey, type PipelinedPlan, type SaveRequest, type SteppedPlan } from './postgres-save-run.js'

/**
 * The jobs table's writes in a PostgreSQL batch (job-ledger.ts): the statements of postgres-save.ts gain steps
 * that write a job's row with its event, and a report or close is decided against the job's row, locked, in the
 * batch transaction, so it is fenced where it would be stored whichever node it reaches.
 */

// Steps of SAVE_EVENT (postgres-save.ts: $1 community, $2 id, $3 pubkey, $4 kind; `inserted` holds the event
// only when this statement stored it), so a duplicate or blocked event writes nothing here either.
/** a dispatched request: its job, queued at generation 0 ($12 capability, $13 queued_at_ms, $14 deadline_at_ms) */
export const ENQUEUE_STEP = `queued AS (
  INSERT INTO jobs (community, id, capability, requester, kind, state, generation, assignee, attempts, queued_at_ms, deadline_at_ms)
  SELECT $1, $2, $12, $3, $4, 'queued', 0, NULL, 0, $13::int8, $14::int8 FROM inserted
  ON CONFLICT DO NOTHING
)`
/** a report or close past its fence: the job's next state ($12 job, $13 state) */
export const MOVE_STEP = `moved AS (
  UPDATE jobs SET state = $13 WHERE community = $1 AND id = $12 AND EXISTS (SELECT 1 FROM inserted)
)`

/**
 * A step of every statement that deletes events (`removed`: their ids, $1 community): a removed request cancels
 * its job, and the new generation fences its assignee out. Only a request's id names a job.
 */
export const CANCEL_REMOVED_STEP = `cancelled AS (
  UPDATE jobs j SET state = 'cancelled', generation = j.generation + 1 FROM removed
  WHERE j.community = $1 AND j.id = removed.id AND j.state IN ${OPEN_STATES_SQL}
)`

/** The event's duplicate check and its job's row, locked until the batch commits ($3 job; no row: nulls). */
export const LOCK_JOB = `
SELECT EXISTS (SELECT 1 FROM events WHERE community = $1 AND id = $2) AS duplicate, j.state, j.generation, j.assignee, j.kind
FROM (SELECT 1) AS one LEFT JOIN (SELECT state, generation, assignee, kind FROM jobs WHERE community = $1 AND id = $3 FOR UPDATE) j ON true`

type Judged = Exclude<JobWrite, { op: 'enqueue' }>

/**
 * A report or close: its statements depend on the job's row, so it is decided between round trips, after the
 * duplicate check (a resend of a stored report answers duplicate) and before anything is stored. `planSave` gives
 * the event's own statements, with the job's move when there is one. The job's id lock serializes it with every
 * batch and deletion touching the job's request; the row lock with an assignment, which takes no id lock.
 */
export function planJudgedSave(
  request: SaveRequest,
  job: Judged,
  planSave: (move: { job: string; state: JobState } | undefined) => PipelinedPlan,
): SteppedPlan {
  const { community, event } = request
  const plain = planSave(undefined)
  return {
    lockKeys: [...plain.lockKeys, idLockKey(community, job.job)],
    async decide(run): Promise<SaveOutcome[]> {
      const [found] = await run({ sql: LOCK_JOB, params: [community, event.id, job.job] })
      if (found!.duplicate) return [{ status: 'duplicate' }]
      const row =
        found!.state === null
          ? undefined
          : {
              state: found!.state as JobState,
              generation: found!.generation as number,
              assignee: found!.assignee as string | null,
              kind: found!.kind as number,
            }
      const why = fenceOf(row, job, event.pubkey)
      if (why !== undefined) return [{ status: 'fenced', why }]
      const state = row === undefined ? undefined : stateAfter(row, job)
      const plan = state === undefined || state === row?.state ? plain : planSave({ job: job.job, state })
      return plan.outcomes(await Promise.all(plan.statements.map(run)))
    },
  }
}
