import type { JobRow, JobState, JobWrite } from './job-ledger.js'

/** What the fence reads of a job's row. */
export interface JobFenceRow {
  state: JobState
  generation: number
  assignee: string | null
  /** the request's kind: a result's must be it + 1000 */
  kind: number
}

type Judged = Exclude<JobWrite, { op: 'enqueue' }>

export const OPEN_STATES_SQL: string
export const JOB_COLUMNS: string

/** Why `job` may not be stored against `row` (undefined: no row), or undefined when it may. */
export function fenceOf(row: JobFenceRow | undefined, job: Judged, author: string): string | undefined

/** The state a job moves to once `job`, past its fence, is stored. */
export function stateAfter(row: JobFenceRow, job: Judged): JobState

/** A row selected with JOB_COLUMNS, as the port returns it. */
export function toJobRow(r: Record<string, unknown>): JobRow
