/**
 * Group commit: many writes share one transaction (docs/architecture.md §6.3: the per-commit cost, not
 * the per-row cost, bounds ingest). A batch is committed when `maxItems` are queued, when the queue
 * stopped growing between two turns of the event loop (nothing more is on its way: an idle relay commits
 * at once), or `maxDelayMs` after its first item — whichever comes first. On SQLite an event costs far
 * less in a large commit than in a small one (bench `store`), so waiting while writes keep arriving pays
 * for itself. Each submitter learns its own result only after the whole batch committed; if the commit
 * throws, every submitter of that batch gets the error: none of the batch was written (or, when the
 * SQLite writer thread died holding it, its outcome is unknown, and the error says so).
 * Up to `maxInFlight` batches commit at once (PostgreSQL: batch N+1 on another connection while batch N is in
 * flight; the database decides latest-wins and deletions under its advisory locks, so their order of commit
 * does not matter); with 1 (SQLite: one writer) batches commit one at a time, in submission order. While a
 * batch is in flight, the next one gathers until that batch finishes or for `maxDelayMs`, whichever is first.
 */

export interface GroupCommitOptions<T, R> {
  maxItems: number
  /** longest wait for more writes while they keep arriving; 0 commits on the next turn of the event loop */
  maxDelayMs: number
  /** batches committing at once; default 1 */
  maxInFlight?: number
  /** one transaction for the whole batch; returns one result per item, in order */
  commit: (batch: readonly T[]) => R[] | Promise<R[]>
  /** turns what the commit threw into the error the submitter of item `index` of the batch receives */
  toError: (cause: unknown, batchSize: number, index: number) => Error
}

export interface GroupCommitStats {
  /** committed transactions */
  transactions: number
  /** items in committed transactions */
  items: number
}

export interface GroupCommit<T, R> {
  submit(item: T): Promise<R>
  /** commits what is queued and waits until nothing is queued or committing */
  drain(): Promise<void>
  stats(): GroupCommitStats
}

interface Waiting<T, R> {
  item: T
  resolve: (r: R) => void
  reject: (e: Error) => void
}

export function createGroupCommit<T, R>(opts: GroupCommitOptions<T, R>): GroupCommit<T, R> {
  const queue: Waiting<T, R>[] = []
  const stats: GroupCommitStats = { transactions: 0, items: 0 }
  const maxInFlight = Math.max(1, opts.maxInFlight ?? 1)
  let cancelTimer: (() => void) | undefined
  let inFlight = 0
  let idle: (() => void)[] = []

  function schedule(): void {
    // a full pipeline picks up whatever arrives when a batch finishes
    if (cancelTimer || inFlight >= maxInFlight) return
    // a batch in flight: gather for the whole delay (or until it finishes) rather than split what arrives in
    // bursts into small overlapping batches. Every PostgreSQL commit costs the server CPU of its own, so fewer,
    // larger batches cost it less per event (bench `store`).
    if (inFlight > 0) {
      const t = setTimeout(start, opts.maxDelayMs)
      cancelTimer = () => clearTimeout(t)
      return
    }
    const firstAt = performance.now()
    // the first tick always waits once more: the turn that queued the first write may queue others after us
    let seen = -1
    let h = setImmediate(function watch() {
      const growing = queue.length > seen
      seen = queue.length
      if (growing && performance.now() - firstAt < opts.maxDelayMs) h = setImmediate(watch)
      else start()
    })
    cancelTimer = () => clearImmediate(h)
  }

  function start(): void {
    cancelTimer?.()
    cancelTimer = undefined
    while (inFlight < maxInFlight && queue.length > 0) {
      inFlight++
      void commitBatch(queue.splice(0, opts.maxItems)).finally(finished)
    }
  }

  function finished(): void {
    inFlight--
    // writes queued while the pipeline was full go at once; otherwise wait for more, as a first write does
    if (queue.length >= opts.maxItems || (queue.length > 0 && inFlight === 0)) start()
    else if (queue.length > 0) schedule()
    if (inFlight === 0 && queue.length === 0) {
      for (const resolve of idle) resolve()
      idle = []
    }
  }

  async function commitBatch(batch: Waiting<T, R>[]): Promise<void> {
    let results: R[]
    try {
      results = await opts.commit(batch.map((w) => w.item))
    } catch (cause) {
      for (const [i, w] of batch.entries()) w.reject(opts.toError(cause, batch.length, i))
      return
    }
    stats.transactions++
    stats.items += batch.length
    for (const [i, w] of batch.entries()) w.resolve(results[i]!)
  }

  return {
    submit(item) {
      return new Promise<R>((resolve, reject) => {
        queue.push({ item, resolve, reject })
        if (queue.length >= opts.maxItems) start()
        else schedule()
      })
    },
    async drain() {
      start()
      while (inFlight > 0 || queue.length > 0) {
        await new Promise<void>((resolve) => idle.push(resolve))
        start()
      }
    },
    stats: () => ({ ...stats }),
  }
}
