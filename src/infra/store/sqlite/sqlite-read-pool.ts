// SQLite read pool: REQ and COUNT statements run on worker threads, each with its own read-only connection to
// the WAL database, so a heavy read never holds the event loop. The single writer is a thread of its own
// (sqlite-writer.ts).
// State: one slot per worker, each running at most one read, plus the reads waiting for a ready worker, served
// fairly across communities (fair-queue.ts): the workers are the whole node's.
// Crash policy: a worker that errors or exits is replaced at once and its read rejects with StoreError (a
// read that killed one reader must not get a second); one past its budget is terminated and replaced.
// Workers that die before reporting Ready `MAX_START_FAILURES` times in a row make the pool give up
// (`usable` false): the store then reads on the main thread again, as with readWorkers 0.
import { Worker } from 'node:worker_threads'
import { overBudgetError, type ReadOverBudget, StoreError } from '../event-store.js'
import { FairQueue } from '../fair-queue.js'
// Extension needed: plain JS shared with the read worker, which runs without a TypeScript loader.
import type { ReadBatch, ReadBudget } from './sqlite-read-core.mjs'

/** Messages the pool sends to a worker (sqlite-read-worker.mjs). */
type WorkerInbox = { type: 'Read'; id: number; batch: ReadBatch; budget: ReadBudget } | { type: 'CrashOnNextRead' }
/**
 * What one read may cost. Its clock starts when the read is asked for, not when a worker takes it: time spent
 * waiting for a worker is part of the budget, so a read behind a busy pool is refused at its budget, not later.
 */
export interface PoolReadBudget {
  ms: number
  maxRows: number
}
/** Messages a worker sends back. */
type WorkerOutbox =
  | { type: 'Ready'; priorityError?: string }
  | { type: 'Answer'; id: number; ok: true; results: unknown[] }
  | { type: 'Answer'; id: number; ok: false; message: string; over?: ReadOverBudget }

export interface SqliteReadPoolOptions {
  file: string
  workers: number
  /** longest a read may run on a worker (the backstop past the read budget), and wait for one when it has no budget */
  queryTimeoutMs: number
  /** what one read may cost on its worker, which stops it itself */
  budget: PoolReadBudget
  /** added to the thread's nice value (Linux; config threads.*Nice, see thread-priority.mjs); 0 or absent: none */
  nice?: number
  log?: { error(obj: object, msg: string): void }
}

export interface SqliteReadPoolStats {
  /** reads waiting for a ready worker */
  waiting: number
  /** workers that have opened their connection and can take a read */
  ready: number
  /** reads that failed for passing their budget, running or waiting */
  budgetExceeded: number
  /** workers replaced after a crash or a budget stop */
  respawns: number
}

export interface SqliteReadPool {
  /** one result per statement; rejects with StoreError (`what` names the read in its message) */
  run(batch: ReadBatch, what: string, community: string): Promise<unknown[]>
  /** false once workers kept failing to start */
  readonly usable: boolean
  stats(): SqliteReadPoolStats
  /** Test hook: the worker the next read goes to calls process.exit when that read arrives, losing it. */
  crashWorkerOnNextReadForTest(): void
  /** after the reads already accepted settled (each within its budget), terminates the workers */
  close(): Promise<void>
}

type Request = {
  id: number
  batch: ReadBatch
  what: string
  community: string
  /** limits.readBudgetMs from when the read was asked for (Date.now(), the clock every thread shares) */
  deadlineMs: number
  resolve: (results: unknown[]) => void
  reject: (err: StoreError) => void
  timer?: ReturnType<typeof setTimeout>
}
type Slot = { index: number; worker: Worker; current?: Request; ready: boolean; retired: boolean }

/**
 * Past this many reads of one community waiting, its next one is refused at once. Their wait is already
 * bounded by the budget; this bounds their memory: each holds its SQL text and parameters (a few KB for
 * typical filters). A community's client reads come through its read places (16 REQ/COUNT at once, each at
 * most a statement per filter side by side), and the relay's own (channel reads behind writes, member lists)
 * are a few at a time, so only a caller past those bounds meets this one. Per community, not per node: a storm
 * in every community at once (a node restarting) is served, and the node's total stays bounded by its
 * communities, which only its operators create.
 */
const MAX_WAITING_READS_PER_COMMUNITY = 1_000
// A worker that cannot even open the file (deleted, permissions) fails the same way every time.
const MAX_START_FAILURES = 3

const workerUrl = new URL('./sqlite-read-worker.mjs', import.meta.url)

export function createSqliteReadPool(opts: SqliteReadPoolOptions): SqliteReadPool {
  const { file, queryTimeoutMs, log } = opts
  const slots: Slot[] = []
  const waiting = new FairQueue<Request>()
  let nextId = 0
  let pending = 0
  let onDrained: (() => void) | undefined
  let closed = false
  let gaveUp = false
  let startFailures = 0
  let budgetExceeded = 0
  let respawns = 0
  const boundOf = (over: ReadOverBudget) => (over.reason === 'rows' ? `${opts.budget.maxRows} rows` : `${opts.budget.ms} ms`)

  function spawn(index: number): void {
    // a plain .mjs worker: no TypeScript loader needed (and none inherited)
    const worker = new Worker(workerUrl, { workerData: { file, nice: opts.nice }, execArgv: [] })
    // a read in flight keeps the process alive through its timer, not through the thread
    worker.unref()
    const slot: Slot = { index, worker, ready: false, retired: false }
    worker.on('message', (msg: WorkerOutbox) => onWorkerMessage(slot, msg))
    // Node emits 'error' and then 'exit' for an uncaught exception; retire() acts on the first only.
    worker.on('error', (err) => retire(slot, err))
    worker.on('exit', (code) => retire(slot, new Error(`read worker exited with code ${code}`)))
    slots[index] = slot
  }

  function onWorkerMessage(slot: Slot, msg: WorkerOutbox): void {
    if (msg.type === 'Ready') {
      if (msg.priorityError) log?.error({ err: msg.priorityError }, "event store: read worker runs at the event loop's priority")
      slot.ready = true
      startFailures = 0
      pump()
      return
    }
    const req = slot.current
    if (!req || req.id !== msg.id) return
    clearTimeout(req.timer)
    slot.current = undefined
    if (msg.ok) req.resolve(msg.results)
    else if (msg.over) {
      budgetExceeded++
      req.reject(overBudgetError(req.what, msg.over, boundOf(msg.over)))
    } else req.reject(new StoreError(`event store ${req.what} failed`, { cause: new Error(msg.message) }))
    pump()
  }

  /** A worker that crashed or exited on its own: its read fails, a new worker takes the slot. */
  function retire(slot: Slot, cause: unknown): void {
    if (slot.retired) return
    slot.retired = true
    const req = slot.current
    slot.current = undefined
    if (req) {
      clearTimeout(req.timer)
      req.reject(new StoreError(`event store ${req.what} failed: its read worker died`, { cause }))
    }
    if (closed || gaveUp) return
    if (!slot.ready) startFailures++
    if (startFailures >= MAX_START_FAILURES) {
      giveUp(cause)
      return
    }
    log?.error({ err: cause }, 'event store: read worker died; replacing it')
    respawns++
    spawn(slot.index)
  }

  function giveUp(cause: unknown): void {
    gaveUp = true
    log?.error({ err: cause }, 'event store: read workers keep failing to start; reading on the main thread')
    for (const req of waiting.drain()) {
      clearTimeout(req.timer)
      req.reject(new StoreError(`event store ${req.what} failed: no read worker could start`, { cause }))
    }
    for (const s of slots) {
      s.retired = true
      if (s.current) {
        clearTimeout(s.current.timer)
        s.current.reject(new StoreError(`event store ${s.current.what} failed: read workers stopped`, { cause }))
        s.current = undefined
      }
      void s.worker.terminate()
    }
  }

  /**
   * better-sqlite3 has no interrupt; terminate() stops the thread at its statement's next call to
   * BUDGET_FUNCTION (see sqlite-read-core.mjs). The replacement opens its own connection meanwhile.
   */
  function stopOverBudget(slot: Slot, req: Request): void {
    slot.current = undefined
    slot.retired = true
    void slot.worker.terminate()
    budgetExceeded++
    log?.error(
      { what: req.what, queryTimeoutMs, statements: req.batch.statements.length, sql: req.batch.statements[0]?.sql },
      'event store: read passed its budget; its worker was stopped and replaced',
    )
    req.reject(overBudgetError(req.what, { reason: 'time', rows: 0 }, `${queryTimeoutMs} ms`))
    if (closed) return
    respawns++
    spawn(slot.index)
  }

  // A worker runs one read at a time, so an idle ready worker is the least busy one; a read behind another on
  // the same thread would spend its budget waiting, and a budget stop would take its neighbour down too.
  const idleWorker = () => slots.find((s) => s.ready && !s.retired && !s.current)
  const holding = (community: string) => slots.filter((s) => s.current?.community === community).length

  function dispatch(slot: Slot, req: Request): void {
    slot.current = req
    req.timer = setTimeout(() => stopOverBudget(slot, req), queryTimeoutMs)
    const budget: ReadBudget = { deadlineMs: req.deadlineMs, maxRows: opts.budget.maxRows }
    slot.worker.postMessage({ type: 'Read', id: req.id, batch: req.batch, budget } satisfies WorkerInbox)
  }

  function pump(): void {
    for (let slot = idleWorker(); slot && waiting.length > 0; slot = idleWorker()) {
      const req = waiting.shift(holding)!
      clearTimeout(req.timer)
      // its budget spent waiting (its timer not run yet): refused here rather than sent to be refused there
      if (Date.now() > req.deadlineMs) refuseWaiting(req)
      else dispatch(slot, req)
    }
  }

  function enqueue(req: Request): void {
    waiting.push(req)
    // at its read budget, or without one at queryTimeoutMs (limits.readBudgetMs is below it: config.ts)
    const waitMs = Math.min(req.deadlineMs - Date.now(), queryTimeoutMs)
    req.timer = setTimeout(() => {
      waiting.remove(req)
      refuseWaiting(req)
    }, waitMs)
  }

  /** A read still waiting for a worker at its budget is over its time; one with no budget, only overloaded. */
  function refuseWaiting(req: Request): void {
    budgetExceeded++
    log?.error({ what: req.what, queryTimeoutMs, waiting: waiting.length }, 'event store: read passed its budget waiting for a worker')
    if (Number.isFinite(opts.budget.ms)) {
      req.reject(overBudgetError(`${req.what} waiting for a read worker`, { reason: 'time', rows: 0 }, `${opts.budget.ms} ms`))
      return
    }
    const message = `event store ${req.what} exceeded its budget of ${queryTimeoutMs} ms waiting for a read worker`
    req.reject(new StoreError(message, { overloaded: true }))
  }

  function run(batch: ReadBatch, what: string, community: string): Promise<unknown[]> {
    if (closed) return Promise.reject(new StoreError('event store is closed'))
    if (gaveUp) return Promise.reject(new StoreError(`event store ${what} failed: no read worker could start`))
    const idle = idleWorker()
    if (!idle && waiting.lengthOf(community) >= MAX_WAITING_READS_PER_COMMUNITY)
      return Promise.reject(new StoreError(`event store ${what} refused: too many reads waiting`, { overloaded: true }))
    pending++
    const settled = () => {
      if (--pending === 0) onDrained?.()
    }
    return new Promise<unknown[]>((resolve, reject) => {
      const req: Request = {
        id: nextId++,
        batch,
        what,
        community,
        deadlineMs: Date.now() + opts.budget.ms,
        resolve: (results) => {
          settled()
          resolve(results)
        },
        reject: (err) => {
          settled()
          reject(err)
        },
      }
      if (idle) dispatch(idle, req)
      else enqueue(req)
    })
  }

  for (let i = 0; i < opts.workers; i++) spawn(i)

  return {
    run,
    get usable() {
      return !gaveUp
    },
    stats: () => ({ waiting: waiting.length, ready: slots.filter((s) => s.ready && !s.retired).length, budgetExceeded, respawns }),
    crashWorkerOnNextReadForTest() {
      const next = idleWorker() ?? slots.find((s) => !s.retired)
      next?.worker.postMessage({ type: 'CrashOnNextRead' } satisfies WorkerInbox)
    },
    async close() {
      closed = true
      if (pending > 0) await new Promise<void>((resolve) => (onDrained = resolve))
      await Promise.all(slots.map((s) => s.worker.terminate()))
    },
  }
}
