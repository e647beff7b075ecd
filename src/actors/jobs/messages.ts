// What a job dispatcher (one per community and capability, docs/jobs.md) hears: from its community, the jobs
// stored and what their assignees reported; from the community's agent connections, who came and went; the
// results of its own store calls; its timer.

import type { SaveOutcome, StoredEvent } from '../../infra/store/event-store.js'
import type { AssignOutcome, JobRow } from '../../infra/store/job-ledger.js'
import type { JobErrorCode, JobReport } from '../../protocols/jobs.js'
import type { Settled } from '../kernel/index.js'

/** A dispatched request as stored: what the dispatcher needs to queue it and hand it out. */
export interface QueuedJob {
  id: string
  requester: string
  kind: number
  raw: string
  queuedAtMs: number
  deadlineAtMs: number | null
}

export type DispatcherMsg =
  /** a request that asks for dispatch was stored (its row is `queued`) */
  | { type: 'Enqueued'; job: QueuedJob }
  /** the store took a report of `pubkey` about one of this dispatcher's jobs (the fence passed) */
  | { type: 'Reported'; pubkey: string; report: JobReport }
  /** the requester deleted these requests (NIP-09): their rows are cancelled */
  | { type: 'Cancelled'; jobs: string[] }
  /** an agent connection offering this capability is ACTIVE: a queued job may go to it */
  | { type: 'AgentReady' }
  /** an agent connection closed, or its lease lapsed: its jobs go to another agent */
  | { type: 'AgentGone'; conn: string; why: 'closed' | 'lapsed' }
  /** the assignment of `job` to `conn` on another node did not reach it: that job goes to another agent */
  | { type: 'Undelivered'; job: string; conn: string }
  /** the open jobs read at start, with their requests */
  | { type: 'Rebuilt'; outcome: Settled<{ rows: JobRow[]; requests: StoredEvent[] }> }
  /** the store's answer to an assignment (or a return to the queue) */
  | { type: 'Assigned'; job: string; conn: string | null; pubkey: string | null; outcome: Settled<AssignOutcome> }
  /** the store's answer to the relay's terminal error for `job` */
  | { type: 'Closed'; job: string; code: JobErrorCode; event: { raw: string }; outcome: Settled<SaveOutcome> }
  /** the timer: accept deadlines, job deadlines */
  | { type: 'Tick' }
  /** with the mesh, now and then: read the open jobs again (notes from other nodes can be lost) */
  | { type: 'Resync' }
  | { type: 'Resynced'; outcome: Settled<{ rows: JobRow[]; requests: StoredEvent[]; known: Set<string> }> }

/**
 * What a community tells its capability's dispatcher, wherever it runs (with the mesh, on the session's owner
 * node); `Agents`: this node's agents offering the capability changed.
 */
export type DispatcherNote =
  | Extract<DispatcherMsg, { type: 'Enqueued' | 'Reported' | 'Cancelled' | 'AgentGone' | 'Resync' }>
  | { type: 'Agents' }
