import type { Filter } from '../../../protocols/nip01/filter.js'
import { type QueryOptions, type StoredEvent, storedEvent } from '../event-store.js'
import { canMatch } from '../filter-plan.js'
import { type SqlQuery, toCountSql, toSelectSql } from './sqlite-query.js'
// Extension needed: plain JS shared with the read worker, which runs without a TypeScript loader.
import type { ReadBatch, Row } from './sqlite-read-core.mjs'

/**
 * The read side of the SQLite event store, wherever it runs: plans the statements sqlite-query builds (on the
 * main thread, it is cheap). A reader (the main thread's connection or a worker's, see sqlite-read-core.mjs)
 * runs the batch and merges, dedupes and orders the arms' rows, so only the page crosses to the main thread.
 */

export type { ReadBatch }

/** A read: the statements to run in one snapshot, and what their results (one per statement) answer. */
export interface ReadPlan<T> {
  batch: ReadBatch
  finish(results: readonly unknown[]): T
}

/** Each filter's `limit` applies to it; the answers are merged, deduplicated and put in NIP-01 order. */
export function planQuery(community: string, filters: readonly Filter[], opts: QueryOptions): ReadPlan<StoredEvent[]> {
  const live = filters.filter(canMatch)
  // one statement per filter, whatever the length of its lists (see toSelectSql)
  const statements: SqlQuery[] = live.map((f) => toSelectSql(community, f, opts, 'rows'))
  // one limited filter: SQLite already returns exactly the page, in NIP-01 order
  const single = statements.length === 1 && live[0]!.limit !== undefined
  const merge = { arms: live.map(() => 1), limits: live.map((f) => f.limit ?? null) }
  const batch: ReadBatch = single ? { statements, mode: 'rows' } : { statements, mode: 'rows', merge }
  // no statement (no filter can match): no result at all
  return { batch, finish: (results) => ((results[0] ?? []) as Row[]).map((r) => storedEvent(r[0], r[3], r[1])) }
}

/** NIP-45: one statement (see toCountSql); no statement when no filter can match. */
export function planCount(community: string, filters: readonly Filter[], opts: QueryOptions): ReadPlan<number> {
  const q = toCountSql(community, filters, opts)
  return { batch: { statements: q ? [q] : [], mode: 'count' }, finish: (results) => (q ? (results[0] as number) : 0) }
}
