// The one error a read ends with when its budget stops it, whichever backend ran it. Plain JavaScript on
// purpose: the SQLite read worker (a bare worker thread, no TypeScript loader) throws it too. Types live in
// read-budget.d.mts. Each store turns it into StoreError `over` (event-store.ts), what the edge answers from.

/**
 * A read stopped by its budget. `reason`: `rows` (more candidate rows than limits.maxRowsExamined) or `time`
 * (past limits.readBudgetMs); `rows`: the candidate rows it had examined when it stopped, 0 when unknown.
 */
export class ReadBudgetExceeded extends Error {
  constructor(reason = 'time', rows = 0) {
    super(`read budget exceeded: ${reason}`)
    this.name = 'ReadBudgetExceeded'
    this.reason = reason
    this.rows = rows
  }

  /** as a plain object: what crosses a thread boundary, and what StoreError `over` carries */
  toOver() {
    return { reason: this.reason, rows: this.rows }
  }
}
