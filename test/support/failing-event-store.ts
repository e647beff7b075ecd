import { type EventStore, StoreError } from '../../src/infra/store/event-store'
import { openSqliteEventStore } from '../../src/infra/store/sqlite/sqlite-event-store'

export type StoreOp = 'save' | 'query' | 'count'

/**
 * The real SQLite EventStore with faults injected on demand: `failNext('query', 3)` makes the next three
 * queries reject with a StoreError, as a store whose disk went away does; after them it answers again.
 * A failed save never reaches the database. For what a real outage can't be produced on demand for.
 */
export interface FailingEventStore {
  store: EventStore
  failNext(op: StoreOp, n: number): void
  /** injected failures not yet spent */
  pending(op: StoreOp): number
  /** injected failures spent so far */
  failed(op: StoreOp): number
}

export function openFailingSqliteStore(file: string): FailingEventStore {
  return withFaults(openSqliteEventStore({ file, groupCommitMaxEvents: 100, groupCommitMaxDelayMs: 0 }))
}

/** Any EventStore (SQLite, PostgreSQL) with faults injected on demand, as openFailingSqliteStore. */
export function withFaults(inner: EventStore): FailingEventStore {
  const left: Record<StoreOp, number> = { save: 0, query: 0, count: 0 }
  const spent: Record<StoreOp, number> = { save: 0, query: 0, count: 0 }
  const faulty = <T>(op: StoreOp, call: () => Promise<T>): Promise<T> => {
    if (left[op] > 0) {
      left[op]--
      spent[op]++
      return Promise.reject(new StoreError(`injected ${op} failure: disk gone`))
    }
    return call()
  }
  return {
    store: {
      save: (c, e, r) => faulty('save', () => inner.save(c, e, r)),
      query: (c, f, o) => faulty('query', () => inner.query(c, f, o)),
      count: (c, f, o) => faulty('count', () => inner.count(c, f, o)),
      deleteEvents: (c, ids) => inner.deleteEvents(c, ids),
      ping: () => inner.ping(),
      close: () => inner.close(),
    },
    failNext(op, n) {
      left[op] = n
    },
    pending: (op) => left[op],
    failed: (op) => spent[op],
  }
}
