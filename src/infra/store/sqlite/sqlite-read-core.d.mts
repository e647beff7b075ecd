import type { Database } from 'better-sqlite3'

export type SqlParam = string | number

/** What one read sends to a reader: its statements, run in one snapshot, and what each one answers. */
export interface ReadBatch {
  statements: { sql: string; params: SqlParam[] }[]
  /** `rows`: each statement's rows as arrays; `count`: each statement's single number */
  mode: 'rows' | 'count'
  /**
   * `rows` only: merge the statements' rows in the reader, which then answers one result, the merged page.
   * The statements are the arms of the filters in order: `arms[i]` of them belong to filter i, whose own
   * `limits[i]` (null: none) applies to its deduplicated rows; the union is deduplicated, newest first.
   */
  merge?: { arms: number[]; limits: (number | null)[] }
}

/** SELECT e.raw, e.id, e.created_at, e.kind, as a reader answers it */
export type Row = [raw: string, id: string, created_at: number, kind: number]

export const BUDGET_FUNCTION: string

/** What one read may cost: candidate rows examined by all its statements, and a deadline (epoch ms). */
export interface ReadBudget {
  deadlineMs: number
  maxRows: number
}

export interface ReadRunner {
  /** one result per statement; throws ReadBudgetExceeded (read-budget.mjs) once the read passes its budget (none: unbounded) */
  run(batch: ReadBatch, budget?: ReadBudget): unknown[]
}

export function createReadRunner(db: Database): ReadRunner
