// Plain JavaScript on purpose: sqlite-read-worker.mjs imports this in a bare worker thread, where no TypeScript
// loader runs. The main-thread reader (sqlite-read.ts) imports the same module, so a read answers alike on
// either side. Types live in sqlite-read-core.d.mts.
import { ReadBudgetExceeded } from '../read-budget.mjs'

/**
 * The SQL function every read statement calls once per candidate row (sqlite-query.ts puts it first in each
 * WHERE). better-sqlite3 exposes neither sqlite3_interrupt nor a progress handler (it is built with
 * SQLITE_OMIT_PROGRESS_CALLBACK), and Worker.terminate() only takes effect when the thread runs JavaScript
 * again: without this call a terminated reader scans on until its statement ends, however long that takes.
 * On the main thread it also checks the read's deadline, so a read there stops too.
 */
export const BUDGET_FUNCTION = 'apiary_within_budget'

const UNBOUNDED = { deadlineMs: Number.POSITIVE_INFINITY, maxRows: Number.POSITIVE_INFINITY }

/** Prepared statements by SQL text; the text depends only on the filter's shape, so few shapes recur. */
const MAX_CACHED_STATEMENTS = 256

export function createReadRunner(db) {
  let budget = UNBOUNDED
  // candidate rows of the whole read, every statement of it together: what one REQ/COUNT costs the store
  let rows = 0
  // past the budget it throws ReadBudgetExceeded: better-sqlite3 ends the statement and rethrows it
  db.function(BUDGET_FUNCTION, { directOnly: true }, () => {
    if (++rows > budget.maxRows) throw new ReadBudgetExceeded('rows', rows)
    if (Date.now() > budget.deadlineMs) throw new ReadBudgetExceeded('time', rows)
    return 1
  })
  const statements = new Map()
  const prepared = (sql) => {
    let stmt = statements.get(sql)
    if (!stmt) {
      if (statements.size >= MAX_CACHED_STATEMENTS) statements.delete(statements.keys().next().value)
      stmt = db.prepare(sql).raw(true)
      statements.set(sql, stmt)
    }
    return stmt
  }
  const runOne = (batch, q) => (batch.mode === 'rows' ? prepared(q.sql).all(...q.params) : prepared(q.sql).get(...q.params)[0])
  // one read transaction: every arm of a read sees the same snapshot, even while another connection commits;
  // a single statement is a snapshot by itself, without the BEGIN and COMMIT
  const inOneTransaction = db.transaction((batch) => batch.statements.map((q) => runOne(batch, q)))
  const runAll = (batch) => (batch.statements.length === 1 ? [runOne(batch, batch.statements[0])] : inOneTransaction(batch))
  return {
    run(batch, readBudget = UNBOUNDED) {
      budget = readBudget
      rows = 0
      try {
        const results = runAll(batch)
        // merged here, in the reader: only the page crosses to the main thread, not every arm's rows
        return batch.merge ? [mergeArms(results, batch.merge)] : results
      } finally {
        budget = UNBOUNDED
      }
    },
  }
}

// NIP-01: newest first, ties lowest id first (rows are [raw, id, created_at, kind])
const newestFirst = (a, b) => b[2] - a[2] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0)

function dedupe(rows) {
  const byId = new Map()
  for (const r of rows) byId.set(r[1], r)
  return [...byId.values()]
}

/** Each filter's `limit` applies to it; the answers are merged, deduplicated and put in NIP-01 order. */
function mergeArms(results, { arms, limits }) {
  let next = 0
  const pages = arms.map((n, i) => {
    const rows = results.slice(next, next + n).flat()
    next += n
    // arms of a tag filter can return the same event once each; a copy must not take a place in the limit
    return limits[i] === null ? rows : dedupe(rows).sort(newestFirst).slice(0, limits[i])
  })
  return dedupe(pages.flat()).sort(newestFirst)
}
