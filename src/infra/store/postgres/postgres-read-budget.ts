/**
 * The rows half of a PostgreSQL read's budget (limits.maxRowsExamined); the time half is the read connections'
 * statement_timeout (postgres-read-pool.ts). As on SQLite (sqlite-read-core.mjs), a read statement calls a
 * function for each row it examines, and the function stops the statement past the bound. What is counted
 * (postgres-query.ts): each row a filter's driving index yields (events, or tags for a tag filter), and each
 * tag row a tag condition reads, since the planner, which picks the join order, may drive the read from one.
 * A LIMIT on the candidates cannot do this: the arms of a limited filter each read their own range, and their
 * sum is what a read costs; and planner estimates are wrong both ways. The count is a transaction-local
 * setting, so it covers the one statement a read is (its filters' UNION ALL) and is gone at the statement's
 * end (each read statement is its own implicit transaction).
 */

/** SQLSTATE of a statement stopped past its rows (class RB: implementation-defined, unused by PostgreSQL). */
export const ROWS_EXCEEDED = 'RB001'

/**
 * EVENTS_V4 (postgres-schema.ts). Declared STABLE, though it sets a GUC: in a VOLATILE PL/pgSQL function
 * each statement takes a fresh snapshot, a cost per candidate row that buys nothing for a body that reads no
 * table. The row key argument keeps the planner from evaluating it once as a constant, and makes it a filter
 * of the scan of the table that row is in; its tiny COST puts it first among that scan's filters, so a row
 * another condition rejects is counted too. PARALLEL UNSAFE: a count split between workers would bound nothing.
 */
export const ROWS_BUDGET_FUNCTION = `
CREATE OR REPLACE FUNCTION apiary_within_budget(row_key BIGINT, max_rows BIGINT) RETURNS BOOLEAN
LANGUAGE plpgsql STABLE PARALLEL UNSAFE COST 0.0001 AS $$
BEGIN
  IF set_config('apiary.rows_examined',
      (coalesce(nullif(current_setting('apiary.rows_examined', true), ''), '0')::bigint + 1)::text, true)::bigint > max_rows THEN
    RAISE EXCEPTION 'read examined more than % rows', max_rows USING ERRCODE = '${ROWS_EXCEEDED}';
  END IF;
  RETURN true;
END $$;
`

/**
 * The condition that counts a candidate row of `rowKey` (`e.seq`, `t.event_seq`) against `maxRows` (a bound
 * parameter). IS NOT NULL (always true) because the planner takes a bare boolean function to keep a third of
 * the rows and misjudges the joins above; a null test it takes to keep them all, which is what it does.
 */
export const withinRowsBudget = (rowKey: string, maxRows: string) => `apiary_within_budget(${rowKey}, ${maxRows}) IS NOT NULL`

export const isRowsExceeded = (error: unknown) => (error as { code?: unknown } | undefined)?.code === ROWS_EXCEEDED
