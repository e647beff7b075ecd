import type { NostrEvent, VerifiedEvent } from '../../protocols/nip01/event.js'
import type { Filter } from '../../protocols/nip01/filter.js'
import type { JobLedger, JobWrite } from './job-ledger.js'
// Extension needed: plain JS shared with the SQLite read worker, which runs without a TypeScript loader.
import type { ReadBudgetExceeded, ReadOverBudget } from './read-budget.mjs'

export type { ReadOverBudget }

/**
 * An event as stored: the exact raw JSON (frames reuse the string) and its kind. `event` parses `raw` on
 * first access only: serving a REQ page needs no parse unless an access rule must look inside.
 */
export interface StoredEvent {
  readonly raw: string
  /** the event id, from its row: no parse needed to tell events apart */
  readonly id: string
  readonly kind: number
  readonly event: NostrEvent
}

const INDEXED_TAG = /^[A-Za-z]$/

/** Calls `add` with each tag a store indexes: NIP-01 filters address single-letter tags only. */
export function forEachIndexedTag(event: NostrEvent, add: (name: string, value: string) => void): void {
  for (const [name, value] of event.tags) {
    if (name !== undefined && value !== undefined && INDEXED_TAG.test(name)) add(name, value)
  }
}

/** A StoredEvent over a raw string; the parse happens once, on first access to `event`. */
export function storedEvent(raw: string, kind: number, id: string): StoredEvent {
  let parsed: NostrEvent | undefined
  return {
    raw,
    id,
    kind,
    get event() {
      parsed ??= JSON.parse(raw) as NostrEvent
      return parsed
    },
  }
}

/**
 * What the store decided for one write. The store is the only place that decides these (architecture §7):
 * - `saved`: committed (OK true only after this resolves).
 * - `duplicate`: the same id is already stored in this community.
 * - `superseded`: replaceable/addressable and a newer version (or same created_at, lower id) is stored.
 * - `deleted`: a NIP-09 deletion by the same author already covers this event.
 * `replaced` lists ids the write removed (older replaceable versions, or events a kind-5 deleted).
 */
export type SaveOutcome =
  | { status: 'saved'; removedIds: string[] }
  | { status: 'duplicate' }
  | { status: 'superseded' }
  | { status: 'deleted' }
  /** its JobWrite was refused: the author is not the job's assignee at that generation, or the job ended (`why`) */
  | { status: 'fenced'; why: string }

/**
 * store.durability: what an acknowledged commit survives. `process`: a crash of the relay process (on SQLite the
 * commit reached the OS, which writes it out later); `power`: a power loss or kernel crash too (the commit
 * reached the disk). SQLite only: PostgreSQL's commits are as durable as its server's `synchronous_commit` makes them.
 */
export type Durability = 'process' | 'power'

export interface QueryOptions {
  /** unix seconds; events whose NIP-40 `expiration` is <= now are never returned */
  now: number
  /**
   * Access rule decided inside the query, so hidden rows never take a place in a `limit` or a count:
   * events of `kinds` are returned only when authored by, or `p`-tagging, one of `readers`.
   */
  authorOnly?: { kinds: readonly number[]; readers: readonly string[] }
  /** NIP-29 channels this reader may not see (private without membership, or deleted): their `h`-tagged events are left out */
  hiddenChannels?: readonly string[]
  /**
   * NIP-29 channel state this reader may not see: for each rule, events of `kinds` whose `tag` names one of
   * `channels` are left out (a hidden channel's 39000–39005 by `d` and 9000–9022 by `h`, a private channel's
   * member lists by `d`).
   */
  hiddenChannelState?: readonly ChannelStateRule[]
}

export interface ChannelStateRule {
  /** `d` for the relay-signed state, `h` for the events sent to the channel */
  tag: 'd' | 'h'
  kinds: readonly number[]
  channels: readonly string[]
}

export interface EventStore {
  /**
   * Queue one verified event for the next group commit. Resolves after its transaction committed.
   * Kind 5 (NIP-09) deletes the author's referenced events in the same transaction and remembers the
   * deletion so a later arrival of a deleted event answers `deleted`; a deleted job request's job is
   * cancelled. Ephemeral kinds must not be passed. `job`: what the event does to the jobs table, in the same
   * transaction (docs/jobs.md); only on a store with `jobs`.
   */
  save(community: string, event: VerifiedEvent, raw: string, job?: JobWrite): Promise<SaveOutcome>
  /** Each filter's own `limit` applies to it (clamped by the caller); results merged, deduplicated,
   * ordered created_at desc, ties by lowest id first. */
  query(community: string, filters: Filter[], opts: QueryOptions): Promise<StoredEvent[]>
  /** removes these events outright (NIP-86 banevent, a moderator's delete); resolves to the ids that were stored */
  deleteEvents(community: string, ids: readonly string[]): Promise<string[]>
  /**
   * NIP-45: number of distinct events matching any filter, each filter counting at most its own `limit`
   * (clamped by the caller, as for query): the union of the pages query() would return, so a COUNT never
   * reads further than the REQ with the same filters.
   */
  count(community: string, filters: Filter[], opts: QueryOptions): Promise<number>
  /** the jobs table (docs/jobs.md); undefined on a backend without it, where dispatch is refused */
  readonly jobs?: JobLedger
  /** true when the backend answers (readiness). */
  ping(): Promise<boolean>
  /** flush pending commits, then release the backend. */
  close(): Promise<void>
}

/** A backend outage (disk full, database gone). Inside actors it goes to supervision; at the edge `error:`. */
export class StoreError extends Error {
  readonly code = 'APIARY_STORE_UNAVAILABLE'
  /**
   * A save that passed its deadline may still commit (a stalled connection that resumes): its real outcome,
   * when it arrives; rejects when it never committed. The caller already answered `error:`.
   */
  readonly late: Promise<SaveOutcome> | undefined
  /**
   * The backend works but this one call was refused or stopped for its cost (a read over its budget, too many
   * reads waiting): the caller answers `error:` and goes on; it is not an outage for supervision.
   */
  readonly overloaded: boolean
  /** a read stopped by its budget: which bound it passed, and the rows it had examined (charged to its reader) */
  readonly over: ReadOverBudget | undefined
  constructor(message: string, options?: { cause?: unknown; late?: Promise<SaveOutcome>; overloaded?: boolean; over?: ReadOverBudget }) {
    super(message, options)
    this.name = 'StoreError'
    this.over = options?.over
    this.overloaded = (options?.overloaded ?? false) || this.over !== undefined
    this.late = options?.late
    this.late?.catch(() => {})
  }
}

/**
 * The StoreError of a read its budget stopped (ReadBudgetExceeded, or the same bounds met outside the reader:
 * a wait for a reader, a terminated worker): the reader hears CLOSED "error: query too expensive" for the bound
 * it passed, and the community goes on. `bound` names the budget for the log (`100000 rows`, `2000 ms`).
 */
export function overBudgetError(what: string, over: ReadOverBudget, bound: string, cause?: ReadBudgetExceeded): StoreError {
  return new StoreError(`event store ${what} exceeded its budget of ${bound}`, { cause, over: { reason: over.reason, rows: over.rows } })
}
