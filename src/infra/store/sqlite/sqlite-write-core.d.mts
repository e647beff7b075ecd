import type { Database } from 'better-sqlite3'
import type { Durability, SaveOutcome } from '../event-store.js'
import type { AssignOutcome, JobWrite } from '../job-ledger.js'

/** One event to save, as the write runner needs it: flat data that crosses to the writer thread cheaply. */
export interface SavePlan {
  type: 'save'
  community: string
  id: string
  pubkey: string
  kind: number
  created_at: number
  /** the `d` part of the replaceable/addressable key: '' for replaceable kinds, null for regular ones */
  dTag: string | null
  /** NIP-40, unix seconds */
  expiresAt: number | null
  raw: string
  /** the indexed tags, flattened: name, value, name, value, ... */
  tags: string[]
  /** kind 5 only: its NIP-09 targets, `addresses` already narrowed to replaceable and addressable kinds */
  deletion: { ids: string[]; addresses: { kind: number; pubkey: string; d: string }[] } | null
  /** what the event does to the jobs table (job-ledger.ts) */
  job: JobWrite | null
}

/** JobLedger.assign, decided in a batch like a save */
export interface AssignPlan {
  type: 'assign'
  community: string
  job: string
  expected: number
  assignee: string | null
}

/** One item of a batch; `commit` answers a SavePlan with a SaveOutcome and an AssignPlan with an AssignOutcome. */
export type WritePlan = SavePlan | AssignPlan
export type WriteOutcome = SaveOutcome | AssignOutcome

/** Every statement of the write runner, by name (the query-plan test checks each one's plan). */
export const SAVE_SQL: Readonly<
  Record<
    | 'hasId'
    | 'hasIdTombstone'
    | 'hasAddressTombstone'
    | 'versions'
    | 'versionsUpTo'
    | 'ownEvent'
    | 'deleteEventTags'
    | 'deleteEvent'
    | 'insertEvent'
    | 'tombstoneId'
    | 'tombstoneAddress'
    | 'deleteTagsByIds'
    | 'deleteByIds'
    | 'jobOf'
    | 'insertJob'
    | 'moveJob'
    | 'assignJob'
    | 'wholeJob'
    | 'cancelJob'
    | 'cancelJobs',
    string
  >
>

export interface WriteRunner {
  /** one transaction; one outcome per plan, in order; throws (having rolled back) if any statement failed */
  commit(batch: readonly WritePlan[]): WriteOutcome[]
  /** the ids among `ids` that were stored, in the order given; one statement, so atomic */
  deleteEvents(community: string, ids: readonly string[]): string[]
}

/** Sets `synchronous` for store.durability on a connection that commits (events, communities, channels, invites). */
export function applyDurability(db: Database, durability: Durability): void

/** The pragmas of every connection that commits to the file (events, communities, channels, invites). */
export function applyCommitPragmas(db: Database, durability?: Durability): void

/** The pragmas of every connection that writes events (the main thread's, the writer thread's). */
export function applyPragmas(db: Database, durability?: Durability): void

export function createWriteRunner(db: Database): WriteRunner
