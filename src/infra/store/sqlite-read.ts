import type { Database, Statement } from 'better-sqlite3'
import type { Filter } from '../../protocols/nip01/filter.js'
import { type QueryOptions, type StoredEvent, storedEvent } from './event-store.js'
import { canMatch } from './filter-plan.js'
import { armsOf, type SqlQuery, toCountSql, toSelectSql } from './sqlite-query.js'

/** The read side of the SQLite event store: runs the SQL that sqlite-query builds and merges the answers. */

/** SELECT e.raw, e.id, e.created_at, e.kind — fetched as arrays: no object per row on the REQ hot path */
type Row = [raw: string, id: string, created_at: number, kind: number]

// NIP-01: newest first, ties lowest id first
const newestFirst = (a: Row, b: Row) => b[2] - a[2] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0)

/** Prepared statements by SQL text; the text depends only on the filter's shape, so few shapes recur. */
const MAX_CACHED_STATEMENTS = 256

export interface SqliteReads {
  query(community: string, filters: readonly Filter[], opts: QueryOptions): StoredEvent[]
  count(community: string, filters: readonly Filter[], opts: QueryOptions): number
}

export function prepareReads(db: Database): SqliteReads {
  const statements = new Map<string, Statement>()
  const prepared = (sql: string): Statement => {
    let stmt = statements.get(sql)
    if (!stmt) {
      if (statements.size >= MAX_CACHED_STATEMENTS) statements.delete(statements.keys().next().value!)
      stmt = db.prepare(sql)
      statements.set(sql, stmt)
    }
    return stmt
  }
  const run = (q: SqlQuery) => prepared(q.sql).raw(true).all(...q.params) as Row[]

  function rowsOf(community: string, f: Filter, opts: QueryOptions): Row[] {
    if (!canMatch(f)) return []
    const rows = armsOf(f).flatMap((arm) => run(toSelectSql(community, arm, opts, 'rows')))
    if (f.limit === undefined) return rows
    // arms of a tag filter can return the same event once each; a copy must not take a place in the limit
    return dedupe(rows).sort(newestFirst).slice(0, f.limit)
  }

  return {
    query(community, filters, opts) {
      const only = filters.length === 1 ? filters[0]! : undefined
      const arms = only && only.limit !== undefined && canMatch(only) ? armsOf(only) : undefined
      // one limited filter in one arm: SQLite already returned exactly the page, in NIP-01 order
      const rows =
        arms?.length === 1
          ? run(toSelectSql(community, arms[0]!, opts, 'rows'))
          : dedupe(filters.flatMap((f) => rowsOf(community, f, opts))).sort(newestFirst)
      return rows.map((r) => storedEvent(r[0], r[3]))
    },
    count(community, filters, opts) {
      const q = toCountSql(community, filters, opts)
      return q ? (prepared(q.sql).raw(false).get(...q.params) as { n: number }).n : 0
    },
  }
}

function dedupe(rows: Row[]): Row[] {
  const byId = new Map<string, Row>()
  for (const r of rows) byId.set(r[1], r)
  return [...byId.values()]
}
