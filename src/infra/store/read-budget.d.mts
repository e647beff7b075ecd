export type BudgetReason = 'rows' | 'time'

/** Which bound of its read budget (docs/architecture.md §6.4) a read passed, and the rows it had examined. */
export interface ReadOverBudget {
  reason: BudgetReason
  rows: number
}

export class ReadBudgetExceeded extends Error {
  constructor(reason?: BudgetReason, rows?: number)
  readonly reason: BudgetReason
  /** candidate rows the read had examined when it stopped; 0 when unknown */
  readonly rows: number
  toOver(): ReadOverBudget
}
