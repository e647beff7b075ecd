import type { Filter } from '../../protocols/nip01/filter.js'
import { type QueryOptions, type StoredEvent, storedEvent } from './event-store.js'
import { canMatch } from './filter-plan.js'
import { armsOf, type SqlQuery, toCountSql, toSelectSql } from './sqlite-query.js'
// Extension needed: plain JS shared with the read worker, which runs without a TypeScript loader.
import type { ReadBatch } from './sqlite-read-core.mjs'

/**
 * The read side of the SQLite event store, wherever it runs: plans the statements sqlite-query builds (on the
 * main thread, it is cheap), and merges their answers. A reader (the main thread's connection or a worker's,
 * see sqlite-read-core.mjs) runs the batch in between, so both paths merge, dedupe and order in one place.
 */

export type { ReadBatch }

/** SELECT e.raw, e.id, e.created_at, e.kind — fetched as arrays: no object per row on the REQ hot path */
type Row = [raw: string, id: string, created_at: number, kind: number]

// NIP-01: newest first, ties lowest id first
const newestFirst = (a: Row, b: Row) => b[2] - a[2] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0)

/** A read: the statements to run in one snapshot, and what their results (one per statement) answer. */
export interface ReadPlan<T> {
  batch: ReadBatch
  finish(results: readonly unknown[]): T
}

/** Each filter's `limit` applies to it; the answers are merged, deduplicated and put in NIP-01 order. */
export function planQuery(community: string, filters: readonly Filter[], opts: QueryOptions): ReadPlan<StoredEvent[]> {
  const live = filters.filter(canMatch)
  const arms = live.map(armsOf)
  const statements: SqlQuery[] = arms.flat().map((arm) => toSelectSql(community, arm, opts, 'rows'))
  const batch: ReadBatch = { statements, mode: 'rows' }
  const toEvents = (rows: readonly Row[]) => rows.map((r) => storedEvent(r[0], r[3], r[1]))
  // one limited filter in one arm: SQLite already returned exactly the page, in NIP-01 order
  if (statements.length === 1 && live[0]!.limit !== undefined) return { batch, finish: (results) => toEvents(results[0] as Row[]) }
  return {
    batch,
    finish(results) {
      let next = 0
      const pages = live.map((f, i) => {
        const rows = (results.slice(next, next + arms[i]!.length) as Row[][]).flat()
        next += arms[i]!.length
        // arms of a tag filter can return the same event once each; a copy must not take a place in the limit
        return f.limit === undefined ? rows : dedupe(rows).sort(newestFirst).slice(0, f.limit)
      })
      return toEvents(dedupe(pages.flat()).sort(newestFirst))
    },
  }
}

/** NIP-45: one statement (see toCountSql); no statement when no filter can match. */
export function planCount(community: string, filters: readonly Filter[], opts: QueryOptions): ReadPlan<number> {
  const q = toCountSql(community, filters, opts)
  return { batch: { statements: q ? [q] : [], mode: 'count' }, finish: (results) => (q ? (results[0] as number) : 0) }
}

function dedupe(rows: Row[]): Row[] {
  const byId = new Map<string, Row>()
  for (const r of rows) byId.set(r[1], r)
  return [...byId.values()]
}
