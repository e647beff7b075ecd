import type { Database } from 'better-sqlite3'

export type SqlParam = string | number

/** What one read sends to a reader: its statements, run in one snapshot, and what each one answers. */
export interface ReadBatch {
  statements: { sql: string; params: SqlParam[] }[]
  /** `rows`: each statement's rows as arrays; `count`: each statement's single number */
  mode: 'rows' | 'count'
}

export const BUDGET_FUNCTION: string

export class ReadBudgetExceeded extends Error {}

export interface ReadRunner {
  /** one result per statement; throws ReadBudgetExceeded once a statement passes `deadlineMs` (epoch ms) */
  run(batch: ReadBatch, deadlineMs?: number): unknown[]
}

export function createReadRunner(db: Database): ReadRunner
