import Database from 'better-sqlite3'
import type { VerifiedEvent } from '../../protocols/nip01/event.js'
import { kindClass } from '../../protocols/nip01/kinds.js'
import { type EventStore, type SaveOutcome, StoreError } from './event-store.js'
import { createGroupCommit, type GroupCommit } from './group-commit.js'
import { prepareReads } from './sqlite-read.js'
import { prepareDeleteEvents, prepareSave, type SaveRequest } from './sqlite-save.js'
import { applyPragmas, migrate } from './sqlite-schema.js'
import { startWalCheckpointer } from './wal-checkpointer.js'

export interface SqliteEventStoreOptions {
  /** path of the database file; ':memory:' for a private in-memory database (tests) */
  file: string
  groupCommitMaxEvents: number
  groupCommitMaxDelayMs: number
  log?: { error(obj: object, msg: string): void }
}

export interface SqliteEventStoreStats {
  /** committed write transactions */
  transactions: number
  /** events in committed write transactions */
  events: number
}

/** The embedded EventStore; `stats()` is for tests and metrics, not part of the port. */
export interface SqliteEventStore extends EventStore {
  stats(): SqliteEventStoreStats
}

/**
 * Opens (creating or migrating) the database. better-sqlite3 is synchronous: a batch commit or a query
 * holds the event loop for its duration, which group commit keeps short per event and armsOf bounds per query.
 */
export function openSqliteEventStore(opts: SqliteEventStoreOptions): SqliteEventStore {
  const db = new Database(opts.file)
  applyPragmas(db)
  migrate(db)
  const writes = createWrites(db, opts)
  const reads = prepareReads(db)
  const deleteEvents = prepareDeleteEvents(db)
  // an in-memory database has no WAL to fold back
  const checkpointer = opts.file === ':memory:' || opts.file === '' ? undefined : startWalCheckpointer(db, opts.file, opts.log)
  const ping = db.prepare('SELECT 1').pluck()
  let closing: Promise<void> | undefined

  /** A closed store or a backend failure is an outage (StoreError), never a partial answer. */
  async function read<T>(what: string, body: () => T): Promise<T> {
    if (closing) throw new StoreError('event store is closed')
    try {
      return body()
    } catch (cause) {
      throw new StoreError(`event store ${what} failed`, { cause })
    }
  }

  return {
    save(community: string, event: VerifiedEvent, raw: string): Promise<SaveOutcome> {
      // a programming error, thrown at the call site rather than mistaken for an outage
      if (kindClass(event.kind) === 'ephemeral') {
        throw new Error(`ephemeral kind ${event.kind} must never reach the event store`)
      }
      if (closing) return Promise.reject(new StoreError('event store is closed'))
      return writes.submit({ community, event, raw })
    },
    query: (community, filters, opts) => read('query', () => reads.query(community, filters, opts)),
    count: (community, filters, opts) => read('count', () => reads.count(community, filters, opts)),
    // outside group commit: better-sqlite3 is synchronous, so it commits between two batches, never inside one
    deleteEvents: (community, ids) => read('delete', () => deleteEvents(community, ids)),
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
        await checkpointer?.stop()
        db.close()
      })
      return closing
    },
    stats: () => {
      const s = writes.stats()
      return { transactions: s.transactions, events: s.items }
    },
  }
}

function createWrites(db: Database.Database, opts: SqliteEventStoreOptions): GroupCommit<SaveRequest, SaveOutcome> {
  const saveOne = prepareSave(db)
  // one transaction per batch; better-sqlite3 rolls it back if any statement throws
  const commitBatch = db.transaction((batch: readonly SaveRequest[]) => batch.map(saveOne))
  return createGroupCommit<SaveRequest, SaveOutcome>({
    maxItems: opts.groupCommitMaxEvents,
    maxDelayMs: opts.groupCommitMaxDelayMs,
    commit: (batch) => commitBatch(batch),
    toError: (cause, batchSize, index) => {
      if (index === 0) opts.log?.error({ err: cause, batchSize }, 'event store: write transaction failed, batch rolled back')
      return new StoreError('event store write failed', { cause })
    },
  })
}
