import Database from 'better-sqlite3'
import type { VerifiedEvent } from '../../../protocols/nip01/event.js'
import { kindClass } from '../../../protocols/nip01/kinds.js'
import { type Durability, type EventStore, overBudgetError, type SaveOutcome, StoreError } from '../event-store.js'
import { createGroupCommit, type GroupCommit } from '../group-commit.js'
import type { AssignOutcome, JobLedger, JobWrite } from '../job-ledger.js'
// Extension needed: plain JS shared with the read worker, which runs without a TypeScript loader.
import { ReadBudgetExceeded } from '../read-budget.mjs'
// Extension needed: as above.
import { createInlineReads } from './sqlite-inline-reads.js'
import { createSqliteJobLedger } from './sqlite-job-ledger.js'
import { planCount, planQuery, type ReadBatch, type ReadPlan } from './sqlite-read.js'
import { createReadRunner } from './sqlite-read-core.mjs'
import { createSqliteReadPool } from './sqlite-read-pool.js'
import { savePlan } from './sqlite-save.js'
import { applyPragmas, migrate } from './sqlite-schema.js'
import { createWriteRunner, type SavePlan, type WriteOutcome, type WritePlan, type WriteRunner } from './sqlite-write-core.mjs'
import { createSqliteWriter, type SqliteWriter, type WriterLifecycle } from './sqlite-writer.js'
import { AUTO_CHECKPOINT_PAGES, startWalCheckpointer } from './wal-checkpointer.js'

export interface SqliteEventStoreOptions {
  /** path of the database file; ':memory:' for a private in-memory database (tests) */
  file: string
  groupCommitMaxEvents: number
  groupCommitMaxDelayMs: number
  /**
   * store.readWorkers: threads that run REQ/COUNT reads, each on its own read-only connection. Default 0:
   * read on the main thread. An in-memory database always reads there (no other connection can see it).
   */
  readWorkers?: number
  /**
   * store.inlineReadMaxRows: with read workers, a read first runs on the main thread while it examines at most
   * this many rows (sqlite-inline-reads.ts: and within 2 ms a turn of the event loop); past either it moves to
   * a worker. Default 0 here, every read to the workers; the relay's configuration turns it on.
   */
  inlineReadMaxRows?: number
  /** store.queryTimeoutMs: longest a read may run (and, on workers, wait for one). Default 5000. */
  queryTimeoutMs?: number
  /**
   * limits.maxRowsExamined and limits.readBudgetMs: what one REQ/COUNT may cost; past either the reader stops
   * it at its next candidate row and frees itself (StoreError with `over`). Default: queryTimeoutMs only.
   */
  readBudget?: { maxRows: number; ms: number }
  /**
   * Commit on a writer thread with its own connection (default), or on the main thread (false). An in-memory
   * database always writes on the main thread.
   */
  writerThread?: boolean
  /** store.durability: what an acknowledged commit survives, on every connection that commits. Default 'process' */
  durability?: Durability
  /** threads.writePathNice: added to the writer thread's nice value (Linux). Default 0 */
  writerNice?: number
  /** threads.readNice: added to the read workers' and the checkpoint worker's nice value (Linux). Default 0 */
  readerNice?: number
  log?: { error(obj: object, msg: string): void }
}

export interface SqliteEventStoreStats {
  /** committed write transactions */
  transactions: number
  /** events in committed write transactions */
  events: number
  /** reads waiting for a read worker */
  readsWaiting: number
  /** reads stopped or refused for passing their read budget (or queryTimeoutMs), running or waiting */
  readBudgetExceeded: number
  /** reads with read workers that were answered on the main thread, within the inline budget */
  readsInline: number
  /** reads that passed the inline budget and moved to a read worker */
  readsMovedToWorker: number
  /** read workers able to take a read; 0 when reading on the main thread */
  readWorkersReady: number
  /** true while writes commit on the writer thread */
  writerThread: boolean
  /** writer threads replaced after a crash */
  writerRespawns: number
  /** PRAGMA synchronous of the connection that commits events now (1 NORMAL, 2 FULL); undefined until a writer thread is Ready */
  writerSynchronous: number | undefined
}

/** The embedded EventStore; `stats()` is for tests and metrics, not part of the port. */
export interface SqliteEventStore extends EventStore {
  readonly jobs: JobLedger
  stats(): SqliteEventStoreStats
  /** Test hook: the read worker the next read goes to dies when that read arrives (no-op on the main thread). */
  crashReadWorkerOnNextReadForTest(): void
  /** Test hook: the writer thread dies when the next batch arrives (no-op on the main thread). */
  crashWriterOnNextCommitForTest(): void
  /** the writer thread's lifecycle, for the node's store-writer actor; undefined when writes run on the main thread by design */
  writerLifecycle(): WriterLifecycle | undefined
}

const DEFAULT_QUERY_TIMEOUT_MS = 5_000

/**
 * Opens (creating or migrating) the database. better-sqlite3 is synchronous: batch commits run on the writer
 * thread, and reads on `readWorkers` threads, so neither holds the event loop. On the main thread (an
 * in-memory database, readWorkers 0, writerThread false, or threads that keep failing to start) a commit
 * holds the loop for its duration, which group commit keeps short per event, and a read for at most
 * queryTimeoutMs: past it the statement stops at its next row (see sqlite-read-core.mjs).
 */
export function openSqliteEventStore(opts: SqliteEventStoreOptions): SqliteEventStore {
  const durability = opts.durability ?? 'process'
  const db = new Database(opts.file)
  applyPragmas(db, durability)
  migrate(db)
  const inMemory = opts.file === ':memory:' || opts.file === ''
  // prepared on first use: with a writer thread, only once it kept failing to start
  let runnerHere: WriteRunner | undefined
  const writeHere = () => (runnerHere ??= createWriteRunner(db))
  const writer: WriteRunner | SqliteWriter =
    inMemory || opts.writerThread === false
      ? writeHere()
      : createSqliteWriter({
          file: opts.file,
          autoCheckpointPages: AUTO_CHECKPOINT_PAGES,
          durability,
          here: writeHere,
          nice: opts.writerNice,
          log: opts.log,
        })
  const thread = 'onThread' in writer ? writer : undefined
  const writes = createWrites(writer, opts)
  const autoCheckpoint = (pages: number) => {
    if (db.open) db.pragma(`wal_autocheckpoint = ${pages}`)
    thread?.setAutoCheckpoint(pages)
  }
  // on the connection that writes: the thread's, or the main thread's when there is none
  const catchUp = () => {
    if (thread?.onThread) thread.catchUpCheckpoint()
    else if (db.open) {
      try {
        db.pragma('wal_checkpoint(PASSIVE)')
      } catch (error) {
        opts.log?.error({ err: error }, 'event store: could not checkpoint the WAL')
      }
    }
  }
  // an in-memory database has no WAL to fold back
  const checkpointer = inMemory ? undefined : startWalCheckpointer(opts.file, autoCheckpoint, catchUp, opts.log, opts.readerNice)
  const queryTimeoutMs = opts.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS
  const budget = opts.readBudget ?? { maxRows: Number.POSITIVE_INFINITY, ms: Number.POSITIVE_INFINITY }
  const readWorkers = inMemory ? 0 : (opts.readWorkers ?? 0)
  const pool =
    readWorkers > 0
      ? createSqliteReadPool({ file: opts.file, workers: readWorkers, queryTimeoutMs, budget, nice: opts.readerNice, log: opts.log })
      : undefined
  // also the fallback once read workers keep failing to start
  const here = createReadRunner(db)
  let budgetExceededHere = 0
  const ping = db.prepare('SELECT 1').pluck()
  const synchronousHere = () => (db.open ? (db.pragma('synchronous', { simple: true }) as number) : undefined)
  let closing: Promise<void> | undefined

  function readHere(batch: ReadBatch, what: string): unknown[] {
    const ms = Math.min(queryTimeoutMs, budget.ms)
    try {
      return here.run(batch, { deadlineMs: Date.now() + ms, maxRows: budget.maxRows })
    } catch (err) {
      if (!(err instanceof ReadBudgetExceeded)) throw err
      budgetExceededHere++
      opts.log?.error(
        { what, ms, reason: err.reason, rows: err.rows, sql: batch.statements[0]?.sql },
        'event store: read passed its budget on the main thread; stopped',
      )
      throw overBudgetError(what, err.toOver(), err.reason === 'rows' ? `${budget.maxRows} rows` : `${ms} ms`, err)
    }
  }

  const inlineReads = createInlineReads(here, Math.min(opts.inlineReadMaxRows ?? 0, budget.maxRows))

  /** A closed store or a backend failure is an outage (StoreError), never a partial answer. */
  async function guarded<T>(what: string, body: () => T | Promise<T>): Promise<T> {
    if (closing) throw new StoreError('event store is closed')
    try {
      return await body()
    } catch (cause) {
      if (cause instanceof StoreError) throw cause
      throw new StoreError(`event store ${what} failed`, { cause })
    }
  }

  const read = <T>(what: string, community: string, plan: () => ReadPlan<T>) =>
    guarded(what, async () => {
      const { batch, finish } = plan()
      if (batch.statements.length === 0) return finish([])
      if (!pool?.usable) return finish(readHere(batch, what))
      return finish(inlineReads.tryHere(batch) ?? (await pool.run(batch, what, community)))
    })

  const jobs = createSqliteJobLedger({
    db,
    // the runner answers an AssignPlan with an AssignOutcome (sqlite-write-core.mjs)
    assign: (plan) => writes.submit(plan) as Promise<AssignOutcome>,
    guarded,
  })

  return {
    jobs,
    save(community: string, event: VerifiedEvent, raw: string, job?: JobWrite): Promise<SaveOutcome> {
      // a programming error, thrown at the call site rather than mistaken for an outage
      if (kindClass(event.kind) === 'ephemeral') {
        throw new Error(`ephemeral kind ${event.kind} must never reach the event store`)
      }
      if (closing) return Promise.reject(new StoreError('event store is closed'))
      let plan: SavePlan
      try {
        plan = savePlan(community, event, raw, job)
      } catch (cause) {
        return Promise.reject(new StoreError('event store write failed: the event could not be planned', { cause }))
      }
      // the runner answers a SavePlan with a SaveOutcome
      return writes.submit(plan) as Promise<SaveOutcome>
    },
    query: (community, filters, o) => read('query', community, () => planQuery(community, filters, o)),
    count: (community, filters, o) => read('count', community, () => planCount(community, filters, o)),
    // outside group commit, and atomic on its own: on the writer thread it runs between two batches, as it
    // does on the main thread, where better-sqlite3 is synchronous
    deleteEvents: (community, ids) => guarded('delete', () => writer.deleteEvents(community, ids)),
    async ping() {
      if (closing) return false
      try {
        return ping.get() === 1
      } catch (err) {
        opts.log?.error({ err }, 'event store: ping failed')
        return false
      }
    },
    close() {
      // saves accepted before close() still commit: their callers are waiting for OK
      closing ??= writes.drain().then(async () => {
        // reads already accepted still answer; the threads' connections close before the final checkpoint
        await thread?.close()
        await pool?.close()
        await checkpointer?.stop()
        db.close()
      })
      return closing
    },
    stats: () => {
      const s = writes.stats()
      const r = pool?.stats()
      return {
        transactions: s.transactions,
        events: s.items,
        readsWaiting: r?.waiting ?? 0,
        readBudgetExceeded: budgetExceededHere + (r?.budgetExceeded ?? 0),
        readsInline: inlineReads.counts().inline,
        readsMovedToWorker: inlineReads.counts().moved,
        readWorkersReady: pool?.usable ? r!.ready : 0,
        writerThread: thread?.onThread ?? false,
        writerRespawns: thread?.stats().respawns ?? 0,
        writerSynchronous: thread?.onThread ? thread.stats().synchronous : synchronousHere(),
      }
    },
    crashReadWorkerOnNextReadForTest: () => pool?.crashWorkerOnNextReadForTest(),
    crashWriterOnNextCommitForTest: () => thread?.crashOnNextCommitForTest(),
    writerLifecycle: () => thread,
  }
}

/** Saves and job assignments, on the writer thread or on the main thread's connection: the same runner either way. */
function createWrites(
  writer: Pick<WriteRunner, 'commit'> | SqliteWriter,
  opts: SqliteEventStoreOptions,
): GroupCommit<WritePlan, WriteOutcome> {
  return createGroupCommit<WritePlan, WriteOutcome>({
    maxItems: opts.groupCommitMaxEvents,
    maxDelayMs: opts.groupCommitMaxDelayMs,
    commit: (batch) => writer.commit(batch),
    toError: (cause, batchSize, index) => {
      if (index === 0)
        opts.log?.error(
          { err: cause, batchSize },
          'event store: write transaction failed (rolled back; if the writer thread died, its outcome is unknown)',
        )
      return new StoreError('event store write failed', { cause })
    },
  })
}
