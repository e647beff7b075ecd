import type { Database, Statement } from 'better-sqlite3'
import type { Filter } from '../../protocols/nip01/filter'
import { type QueryOptions, type StoredEvent, storedEvent } from './event-store'
import { armsOf, canMatch, type SqlQuery, toCountSql, toSelectSql } from './sqlite-query'

/** The read side of the SQLite event store: runs the SQL that sqlite-query builds and merges the answers. */

interface Row {
  raw: string
  id: string
  created_at: number
  kind: number
}

// NIP-01: newest first, ties lowest id first
const newestFirst = (a: Row, b: Row) => b.created_at - a.created_at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

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
  const run = (q: SqlQuery) => prepared(q.sql).all(...q.params) as Row[]

  function rowsOf(community: string, f: Filter, opts: QueryOptions): Row[] {
    if (!canMatch(f)) return []
    const rows = armsOf(f).flatMap((arm) => run(toSelectSql(community, arm, opts, 'rows')))
    if (f.limit === undefined) return rows
    // arms of a tag filter can return the same event once each; a copy must not take a place in the limit
    return dedupe(rows).sort(newestFirst).slice(0, f.limit)
  }

  return {
    query(community, filters, opts) {
      const rows = dedupe(filters.flatMap((f) => rowsOf(community, f, opts))).sort(newestFirst)
      return rows.map((r) => storedEvent(r.raw, r.kind))
    },
    count(community, filters, opts) {
      const q = toCountSql(community, filters, opts)
      return q ? (prepared(q.sql).get(...q.params) as { n: number }).n : 0
    },
  }
}

function dedupe(rows: Row[]): Row[] {
  const byId = new Map<string, Row>()
  for (const r of rows) byId.set(r.id, r)
  return [...byId.values()]
}
