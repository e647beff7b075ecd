// Reads tried on the main thread before a read worker (store.inlineReadMaxRows). A read handed to a worker
// costs a message each way, two wake-ups and a copy of its page: for an id lookup or an author's latest page
// that is most of its cost. So a read first runs here within a small budget, and one that passes it moves to a
// worker, having held the event loop that long at most.
import { ReadBudgetExceeded } from '../read-budget.mjs'
import type { ReadBatch, ReadRunner } from './sqlite-read-core.mjs'

/**
 * How long the reads tried here may hold one turn of the event loop, all together, so a burst of reads in one
 * turn cannot add up: a tenth of the 20 ms event-loop delay p99 the relay is held to under ingest with readers
 * (bench `ingest-with-reads`).
 */
const INLINE_READ_MS_PER_TURN = 2

/**
 * Bound parameters longer than this go straight to a worker: a long driving list (thousands of authors) is
 * walked value by value, and values with no candidate row never meet the row budget.
 */
const INLINE_MAX_PARAM_CHARS = 4_096

export interface InlineReads {
  /** the batch's results when it ran here within the budget; undefined when it is a worker's to run */
  tryHere(batch: ReadBatch): unknown[] | undefined
  /** reads answered here, and reads that passed the budget here and moved to a worker */
  counts(): { inline: number; moved: number }
}

/** `maxRows` 0: every read goes to a worker. */
export function createInlineReads(runner: ReadRunner, maxRows: number): InlineReads {
  let spentMs = 0
  let resetScheduled = false
  let inline = 0
  let moved = 0
  const chargeThisTurn = (ms: number) => {
    spentMs += ms
    if (resetScheduled) return
    resetScheduled = true
    setImmediate(() => {
      spentMs = 0
      resetScheduled = false
    })
  }
  return {
    tryHere(batch) {
      const allowanceMs = INLINE_READ_MS_PER_TURN - spentMs
      if (maxRows === 0 || allowanceMs <= 0 || paramChars(batch) > INLINE_MAX_PARAM_CHARS) return undefined
      const t0 = performance.now()
      try {
        // Date.now() is the reader's one clock (the budget function checks it per candidate row): a try may
        // run into the next millisecond, never further
        const results = runner.run(batch, { deadlineMs: Date.now() + allowanceMs, maxRows })
        inline++
        return results
      } catch (err) {
        if (!(err instanceof ReadBudgetExceeded)) throw err
        moved++
        return undefined
      } finally {
        chargeThisTurn(performance.now() - t0)
      }
    },
    counts: () => ({ inline, moved }),
  }
}

function paramChars(batch: ReadBatch): number {
  let n = 0
  for (const s of batch.statements) for (const p of s.params) if (typeof p === 'string') n += p.length
  return n
}
