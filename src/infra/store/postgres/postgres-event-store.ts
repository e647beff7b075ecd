import type { VerifiedEvent } from '../../../protocols/nip01/event.js'
import { kindClass } from '../../../protocols/nip01/kinds.js'
import { type EventStore, overBudgetError, type SaveOutcome, type StoredEvent, StoreError, storedEvent } from '../event-store.js'
import { canMatch } from '../filter-plan.js'
import { createGroupCommit } from '../group-commit.js'
import type { JobLedger, JobWrite } from '../job-ledger.js'
// Extension needed: plain JS shared with the SQLite read worker, which runs without a TypeScript loader.
import { ReadBudgetExceeded } from '../read-budget.mjs'
import { FencedError, type SessionFence } from '../session-fence.js'
import { createPostgresJobLedger } from './postgres-job-ledger.js'
import { toCountSql, toQuerySql } from './postgres-query.js'
import { openReadPool } from './postgres-read-pool.js'
import { commitBatch, deleteEvents } from './postgres-save.js'
import type { SaveRequest } from './postgres-save-run.js'
import { connectPostgres, DeadlineError, EVENT_MIGRATIONS, migrate, withDeadline } from './postgres-schema.js'
import { SESSION_FENCE_MIGRATIONS } from './postgres-session-fence.js'

export interface PostgresEventStoreOptions {
  /** postgres://user@host:port/database */
  url: string
  /** the same database reached another way for REQ/COUNT (a test routes reads through a proxy); default `url` */
  readUrl?: string
  /** connections for reads, apart from the commits' (config store.postgresReadPoolSize); default 4 */
  readPoolSize?: number
  /** longest one query() or count() may take, waiting for a connection included (config limits.readBudgetMs); default 2,000 */
  readBudgetMs?: number
  /** candidate rows one query() or count() may examine (config limits.maxRowsExamined); default: not counted */
  maxRowsExamined?: number
  groupCommitMaxEvents: number
  groupCommitMaxDelayMs: number
  log?: { error(obj: object, msg: string): void }
}

export interface PostgresEventStoreStats {
  /** committed write transactions */
  transactions: number
  /** events in committed write transactions */
  events: number
  /** reads stopped at their budget (limits.readBudgetMs, limits.maxRowsExamined) */
  readBudgetExceeded: number
}

/** The cluster EventStore; `stats()` is for tests and metrics, not part of the port. */
export interface PostgresEventStore extends EventStore {
  readonly jobs: JobLedger
  stats(): PostgresEventStoreStats
  /**
   * A mesh session's events, in one transaction of their own fenced for `fence`: a stale generation
   * rejects with FencedError and stores none of them. Not through group commit, where one fenced-off session
   * would fail every other community's events in the batch.
   */
  saveFenced(requests: readonly SaveRequest[], fence: SessionFence): Promise<SaveOutcome[]>
  /** EventStore.deleteEvents in a transaction fenced for `fence` (as saveFenced) */
  deleteEventsFenced(community: string, ids: readonly string[], fence: SessionFence): Promise<string[]>
}

/** Write transactions in flight at once: two keep the database busy while one batch waits on its round trip. */
const PIPELINED_COMMITS = 2

/** SELECT e.raw, e.id, e.created_at, e.kind, fetched as arrays: no object per row on the REQ hot path */
type Row = [raw: string, id: string, created_at: number, kind: number]

// NIP-01: newest first, ties lowest id first
const newestFirst = (a: Row, b: Row) => b[2] - a[2] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0)

/**
 * Connects and migrates (see postgres-schema.ts); several nodes may open the same database at once. Writes go
 * through group commit; the batch transaction is asynchronous, so reads keep running while one commits.
 */
export async function openPostgresEventStore(opts: PostgresEventStoreOptions): Promise<PostgresEventStore> {
  const sql = connectPostgres(opts.url)
  try {
    await migrate(sql, 'events', EVENT_MIGRATIONS)
    await migrate(sql, 'mesh', SESSION_FENCE_MIGRATIONS)
  } catch (cause) {
    await sql.end({ timeout: 1 })
    throw new StoreError('event store migration failed', { cause })
  }
  const budget = { ms: opts.readBudgetMs ?? 2_000, maxRows: opts.maxRowsExamined ?? Number.POSITIVE_INFINITY }
  const reads = openReadPool(opts.readUrl ?? opts.url, opts.readPoolSize ?? 4, budget)
  let readBudgetExceeded = 0
  const writes = createGroupCommit<SaveRequest, SaveOutcome>({
    maxItems: opts.groupCommitMaxEvents,
    maxDelayMs: opts.groupCommitMaxDelayMs,
    // batch N+1 commits on another connection while batch N is in flight (group-commit.ts)
    maxInFlight: PIPELINED_COMMITS,
    commit: (batch) => withDeadline('event store commit', commitBatch(sql, batch)),
    toError: (cause, batchSize, index) => {
      // past its deadline the transaction may still commit when the connection comes back: keep its outcome
      if (cause instanceof DeadlineError) {
        if (index === 0)
          opts.log?.error({ err: cause, batchSize }, 'event store: write transaction passed its deadline; its outcome is awaited')
        const late = (cause.pending as Promise<SaveOutcome[]>).then((outcomes) => outcomes[index] as SaveOutcome)
        return new StoreError('event store write timed out', { cause, late })
      }
      if (index === 0) opts.log?.error({ err: cause, batchSize }, 'event store: write transaction failed, batch rolled back')
      return new StoreError('event store write failed', { cause })
    },
  })
  let closing: Promise<void> | undefined

  /**
   * A closed store or a backend failure is an outage (StoreError), never a partial answer. A read stopped at
   * its budget is the reader's cost, not an outage: `overloaded`, so the reader hears CLOSED and the community
   * goes on (community-reads.ts).
   */
  async function read<T>(what: string, body: () => Promise<T>): Promise<T> {
    if (closing) throw new StoreError('event store is closed')
    try {
      return await body()
    } catch (cause) {
      if (!(cause instanceof ReadBudgetExceeded)) throw new StoreError(`event store ${what} failed`, { cause })
      readBudgetExceeded++
      throw overBudgetError(what, cause.toOver(), cause.reason === 'rows' ? `${budget.maxRows} rows` : `${budget.ms} ms`, cause)
    }
  }

  return {
    jobs: createPostgresJobLedger(sql, () => closing !== undefined),
    save(community: string, event: VerifiedEvent, raw: string, job?: JobWrite): Promise<SaveOutcome> {
      // a programming error, thrown at the call site rather than mistaken for an outage
      if (kindClass(event.kind) === 'ephemeral') {
        throw new Error(`ephemeral kind ${event.kind} must never reach the event store`)
      }
      if (closing) return Promise.reject(new StoreError('event store is closed'))
      return writes.submit({ community, event, raw, job })
    },
    query: (community, filters, o) =>
      read('query', async () => {
        const q = toQuerySql(community, filters, o, budget.maxRows)
        if (!q) return []
        const [page] = await reads.values<Row>(community, [q])
        // one limited filter's page is already exact; a tag filter without a limit repeats an event per value
        const live = filters.filter(canMatch)
        const rows = live.length === 1 && live[0]!.limit !== undefined ? page! : merge(page!)
        return rows.map((r): StoredEvent => storedEvent(r[0], r[3], r[1]))
      }),
    async saveFenced(requests, fence) {
      if (requests.some((r) => kindClass(r.event.kind) === 'ephemeral')) throw new Error('ephemeral kinds must never reach the event store')
      if (closing) throw new StoreError('event store is closed')
      try {
        return await withDeadline('event store fenced commit', commitBatch(sql, requests, fence))
      } catch (cause) {
        if (cause instanceof FencedError) throw cause
        throw new StoreError('event store fenced write failed', { cause })
      }
    },
    async deleteEventsFenced(community, ids, fence) {
      if (closing) throw new StoreError('event store is closed')
      try {
        return await withDeadline('event store fenced delete', deleteEvents(sql, community, ids, fence))
      } catch (cause) {
        if (cause instanceof FencedError) throw cause
        throw new StoreError('event store fenced delete failed', { cause })
      }
    },
    // outside group commit: its own transaction, ordered against saves of the same ids by their id locks
    async deleteEvents(community, ids) {
      if (closing) throw new StoreError('event store is closed')
      try {
        return await withDeadline('event store delete', deleteEvents(sql, community, ids))
      } catch (cause) {
        throw new StoreError('event store delete failed', { cause })
      }
    },
    count: (community, filters, o) =>
      read('count', async () => {
        const q = toCountSql(community, filters, o, budget.maxRows)
        if (!q) return 0
        const [rows] = await reads.values<[n: number]>(community, [q])
        return rows![0]![0]
      }),
    async ping() {
      if (closing) return false
      try {
        const [row] = await withDeadline('event store ping', sql`SELECT 1 AS one`)
        return row?.one === 1
      } catch (err) {
        opts.log?.error({ err }, 'event store: ping failed')
        return false
      }
    },
    close() {
      // saves accepted before close() still commit: their callers are waiting for OK
      closing ??= writes.drain().then(() => Promise.all([sql.end({ timeout: 5 }), reads.end()]).then(() => {}))
      return closing
    },
    stats: () => {
      const s = writes.stats()
      return { transactions: s.transactions, events: s.items, readBudgetExceeded }
    },
  }
}

/** The filters' rows of one read, each event once, in NIP-01 order. */
function merge(rows: Row[]): Row[] {
  const byId = new Map<string, Row>()
  for (const r of rows) byId.set(r[1], r)
  return [...byId.values()].sort(newestFirst)
}
