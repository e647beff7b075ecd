/**
 * The jobs table (docs/jobs.md): one row per dispatched job, written in the same transaction as the events
 * that change it, so that whatever a superseded assignee still sends is refused where it would be stored
 * (the fence), whichever node it reaches. Only the store decides a job's generation and its end.
 */

import type { SessionFence } from './session-fence.js'

/** `queued`, `assigned` (sent to an agent), `running` (the agent accepted): open; the rest are final */
export type JobState = 'queued' | 'assigned' | 'running' | 'success' | 'error' | 'cancelled'
export const isOpenJobState = (s: JobState): boolean => s === 'queued' || s === 'assigned' || s === 'running'

/** What saving an event does to the jobs table, decided in its transaction. */
export type JobWrite =
  /** a request that asks for dispatch: its row, `queued` at generation 0 */
  | { op: 'enqueue'; capability: string; queuedAtMs: number; deadlineAtMs: number | null }
  /**
   * feedback or a result from the event's author naming `job` at `generation`: stored only when the job is
   * open and the author is its assignee at that generation (a job with no row is not dispatched: stored as
   * is). `ends`: the job's final answer (result, or an error that is not retryable); `accepts`: `processing`
   */
  | {
      op: 'report'
      job: string
      generation: number | null
      ends: 'success' | 'error' | null
      accepts: boolean
      /** a result's kind: it must be the request's kind + 1000 (NIP-90) */
      resultKind?: number
    }
  /** the relay's own terminal error: stored only while the job is open at `generation` */
  | { op: 'close'; job: string; generation: number }

export interface JobRow {
  id: string
  capability: string
  requester: string
  kind: number
  state: JobState
  generation: number
  assignee: string | null
  /** assignments made so far */
  attempts: number
  queuedAtMs: number
  deadlineAtMs: number | null
}

export type AssignOutcome =
  | { status: 'assigned'; generation: number; attempts: number }
  /** the job is not at `expected` any more, or not open: nothing changed */
  | { status: 'stale'; row: JobRow | undefined }

export interface JobLedger {
  /**
   * Hands `job` to `assignee` under generation `expected + 1` (attempts + 1), or back to the queue when
   * `assignee` is null (generation + 1, no assignee: the one it had is fenced out), only if the job is open
   * at generation `expected`. Atomic: of two calls with the same `expected`, one wins. With `fence` (the mesh's
   * capability session, on the cluster store) the session is claimed first: FencedError when a newer owner wrote.
   */
  assign(community: string, job: string, expected: number, assignee: string | null, fence?: SessionFence): Promise<AssignOutcome>
  /**
   * A capability's open jobs, oldest first (queued_at_ms, then id), up to `limit`, after `after` when given (the
   * last row of the page before): a dispatcher's queue read back after a restart, page by page.
   */
  openJobs(community: string, capability: string, limit: number, after?: Pick<JobRow, 'queuedAtMs' | 'id'>): Promise<JobRow[]>
  /** the capabilities with open jobs in the community: whose dispatchers must start when the community does */
  openCapabilities(community: string): Promise<string[]>
  /** one job's row, or undefined */
  job(community: string, job: string): Promise<JobRow | undefined>
}
