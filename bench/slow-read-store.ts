// A working fake of a slow store for the `slow-read` scenario: the real EventStore, except that a query or count
// with a filter carrying the marker tag (`#t: ["bench-slow"]`) waits `delayMs` before it runs, as a heavy
// query on a loaded PostgreSQL would. The wait is a timer, not a busy loop: the event loop stays free, so what
// the scenario sees is how the relay schedules around a read that takes long, not a blocked process.
import type { EventStore } from '../src/infra/store/event-store'
import type { Filter } from '../src/protocols/nip01/filter'

/** `#t` value that marks a filter as slow; bench/serve-apiary.ts wraps the store when BENCH_SLOW_READ_MS is set */
export const SLOW_READ_TAG = 'bench-slow'

export const isSlowRead = (filters: readonly Filter[]) => filters.some((f) => f.tags?.t?.includes(SLOW_READ_TAG) === true)

export function withSlowReads(inner: EventStore, delayMs: number): EventStore {
  const later = <T>(filters: readonly Filter[], run: () => Promise<T>): Promise<T> =>
    isSlowRead(filters) ? new Promise((resolve) => setTimeout(resolve, delayMs)).then(run) : run()
  return {
    save: (c, e, raw) => inner.save(c, e, raw),
    query: (c, filters, o) => later(filters, () => inner.query(c, filters, o)),
    count: (c, filters, o) => later(filters, () => inner.count(c, filters, o)),
    deleteEvents: (c, ids) => inner.deleteEvents(c, ids),
    ping: () => inner.ping(),
    close: () => inner.close(),
  }
}
