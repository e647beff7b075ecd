// SQLite writer thread, main side: the event store's batch transactions and deletions run on one worker
// thread with its own connection (sqlite-write-worker.mjs), so a commit never holds the event loop. SQLite
// has one writer: every write goes to this thread, which runs them in the order they were sent.
// State: the thread; the requests waiting for it to be Ready (they have not run), and those it was sent and
// has not answered (in order); its start failures.
// Crash policy: a thread that errors or exits fails every request it was sent (its open transaction rolled
// back, but one it had committed may not have been answered: the outcome is unknown, and the error says so)
// and is replaced at once; requests still waiting go to the replacement. Threads that die before reporting
// Ready `MAX_START_FAILURES` times in a row make the writer give up (`onThread` false): it then runs every
// request, the waiting ones first, on the main thread's connection (`here`), as an in-memory store does, and
// tells its give-up listener; the node's store-writer actor (src/actors/node) backs off and asks for a new
// thread (`retryThread`), which takes the writes back once it reports Ready.
import { Worker } from 'node:worker_threads'
import { type Durability, StoreError } from '../event-store.js'
// Extension needed: plain JS shared with the writer thread, which runs without a TypeScript loader.
import type { WriteOutcome, WritePlan, WriteRunner } from './sqlite-write-core.mjs'

/** Messages to the thread. */
type Work = { type: 'Commit'; batch: readonly WritePlan[] } | { type: 'Delete'; community: string; ids: readonly string[] }
type WorkerInbox =
  | (Work & { id: number })
  | { type: 'AutoCheckpoint'; pages: number }
  | { type: 'CatchUpCheckpoint' }
  | { type: 'CrashOnNextCommit' }
/** Messages the thread sends back. */
type WorkerOutbox =
  | { type: 'Ready'; priorityError?: string; synchronous: number }
  | { type: 'Done'; id: number; ok: true; result: unknown }
  | { type: 'Done'; id: number; ok: false; message: string; code?: string }
  | { type: 'CheckpointFailed'; message: string }

export interface SqliteWriterOptions {
  file: string
  /** the thread connection's wal_autocheckpoint (0 while a checkpoint worker does it) */
  autoCheckpointPages: number
  /** store.durability: the thread connection's `synchronous` */
  durability: Durability
  /** the main thread's runner, for when no thread could start */
  here: () => WriteRunner
  /** added to the thread's nice value (Linux; config threads.*Nice, see thread-priority.mjs); 0 or absent: none */
  nice?: number
  log?: { error(obj: object, msg: string): void }
}

/** The writer thread's lifecycle, for the supervisor that brings a thread back after the writer gave up. */
export interface WriterLifecycle {
  /** true while writes go to the thread; false once threads kept failing to start */
  readonly onThread: boolean
  /** called each time threads kept failing to start and writes moved to the main thread (one listener) */
  onGaveUp(listener: () => void): void
  /**
   * After a give-up: starts a thread again (MAX_START_FAILURES tries, as at first). Writes stay on the main
   * thread until it reports Ready: each one there is done before the next starts, so none overtakes another.
   * Does nothing unless the writer gave up and has no thread starting, or once it is closed.
   */
  retryThread(): void
}

export interface SqliteWriter extends WriterLifecycle {
  /** one transaction; one outcome per plan; rejects with StoreError */
  commit(batch: readonly WritePlan[]): Promise<WriteOutcome[]>
  deleteEvents(community: string, ids: readonly string[]): Promise<string[]>
  setAutoCheckpoint(pages: number): void
  /** the thread checkpoints the WAL between two commits, so its next commit can restart it (wal-checkpointer.ts) */
  catchUpCheckpoint(): void
  /** `synchronous` is the level the last thread to report Ready commits at (PRAGMA synchronous: 1 NORMAL, 2 FULL) */
  stats(): { respawns: number; synchronous: number | undefined }
  /** Test hook: the thread calls process.exit when the next batch arrives, losing it. */
  crashOnNextCommitForTest(): void
  /** after the requests already accepted are answered (or CLOSE_DEADLINE_MS passed), ends the thread */
  close(): Promise<void>
}

type Request = { work: Work; resolve: (result: unknown) => void; reject: (err: StoreError) => void }
type Thread = { worker: Worker; ready: boolean; retired: boolean }

// A thread that cannot even open the file (deleted, permissions) fails the same way every time.
const MAX_START_FAILURES = 3
/** close() waits this long for answers; a commit runs in milliseconds, so past it the thread is stuck */
const CLOSE_DEADLINE_MS = 10_000

const workerUrl = new URL('./sqlite-write-worker.mjs', import.meta.url)
const whatOf = (work: Work) => (work.type === 'Commit' ? 'write' : 'delete')

export function createSqliteWriter(opts: SqliteWriterOptions): SqliteWriter {
  const { file, log } = opts
  let autoCheckpointPages = opts.autoCheckpointPages
  /** accepted while no thread was Ready: none of them has run */
  const waiting: Request[] = []
  const sent = new Map<number, Request>()
  let nextId = 0
  let startFailures = 0
  let respawns = 0
  let synchronous: number | undefined
  let gaveUp = false
  let gaveUpListener: (() => void) | undefined
  let closed = false
  let onDrained: (() => void) | undefined
  let current: Thread | undefined
  spawn()

  function spawn(): void {
    let worker: Worker
    try {
      // a plain .mjs worker: no TypeScript loader needed (and none inherited)
      worker = new Worker(workerUrl, {
        workerData: { file, autoCheckpointPages, durability: opts.durability, nice: opts.nice },
        execArgv: [],
      })
    } catch (err) {
      // Node throws here when it cannot create a thread at all: a start failure like any other
      current = undefined
      startFailed(err)
      return
    }
    // referenced only while it owes an answer: an idle writer does not keep the process alive
    worker.unref()
    const thread: Thread = { worker, ready: false, retired: false }
    current = thread
    worker.on('message', (msg: WorkerOutbox) => onMessage(thread, msg))
    // an answer that cannot be decoded would leave its request pending: the thread is replaced instead
    worker.on('messageerror', (err) => retire(thread, err))
    // Node emits 'error' and then 'exit' for an uncaught exception; retire() acts on the first only.
    worker.on('error', (err) => retire(thread, err))
    worker.on('exit', (code) => retire(thread, new Error(`writer thread exited with code ${code}`)))
  }

  function onMessage(thread: Thread, msg: WorkerOutbox): void {
    if (thread.retired) return
    if (msg.type === 'Ready') {
      if (msg.priorityError) log?.error({ err: msg.priorityError }, "event store: writer thread runs at the event loop's priority")
      thread.ready = true
      synchronous = msg.synchronous
      startFailures = 0
      // after a give-up, a retried thread takes the writes back (apiary_store_writer_thread shows it)
      gaveUp = false
      for (const req of waiting.splice(0)) post(thread, req)
      return
    }
    if (msg.type === 'CheckpointFailed') {
      // the WAL stays as long as it is until a later pass (the next background pass asks again)
      log?.error({ err: msg.message }, 'event store: the writer thread could not checkpoint the WAL')
      return
    }
    const req = sent.get(msg.id)
    if (!req) return
    settle(msg.id)
    if (msg.ok) req.resolve(msg.result)
    else {
      const cause = Object.assign(new Error(msg.message), msg.code === undefined ? {} : { code: msg.code })
      req.reject(new StoreError(`event store ${whatOf(req.work)} failed`, { cause }))
    }
  }

  function post(thread: Thread, req: Request): void {
    const id = nextId++
    try {
      thread.worker.postMessage({ ...req.work, id } satisfies WorkerInbox)
    } catch (cause) {
      req.reject(new StoreError(`event store ${whatOf(req.work)} failed: could not hand it to the writer thread`, { cause }))
      return
    }
    sent.set(id, req)
    thread.worker.ref()
  }

  function settle(id: number): void {
    sent.delete(id)
    if (sent.size > 0) return
    current?.worker.unref()
    if (waiting.length === 0) onDrained?.()
  }

  function retire(thread: Thread, cause: unknown): void {
    if (thread.retired) return
    thread.retired = true
    void thread.worker.terminate()
    for (const [id, req] of [...sent]) {
      settle(id)
      req.reject(new StoreError(`event store ${whatOf(req.work)} failed: the writer thread stopped, so its outcome is unknown`, { cause }))
    }
    if (closed) return
    if (!thread.ready) {
      startFailed(cause)
      return
    }
    log?.error({ err: cause }, 'event store: the writer thread died; replacing it')
    respawns++
    spawn()
  }

  function startFailed(cause: unknown): void {
    if (++startFailures < MAX_START_FAILURES) {
      log?.error({ err: cause }, 'event store: the writer thread failed to start; trying again')
      respawns++
      spawn()
      return
    }
    gaveUp = true
    log?.error({ err: cause }, 'event store: the writer thread keeps failing to start; writing on the main thread')
    // they never ran: in order, on the main thread, ahead of anything submitted from now on
    for (const req of waiting.splice(0)) runHere(req)
    onDrained?.()
    gaveUpListener?.()
  }

  function runHere(req: Request): void {
    try {
      const { work } = req
      req.resolve(work.type === 'Commit' ? opts.here().commit(work.batch) : opts.here().deleteEvents(work.community, work.ids))
    } catch (cause) {
      req.reject(new StoreError(`event store ${whatOf(req.work)} failed`, { cause }))
    }
  }

  function request<T>(work: Work): Promise<T> {
    if (closed) return Promise.reject(new StoreError('event store is closed'))
    return new Promise<T>((resolve, reject) => {
      const req: Request = { work, resolve: resolve as (r: unknown) => void, reject }
      if (gaveUp) runHere(req)
      else if (current?.ready) post(current, req)
      else waiting.push(req)
    })
  }

  return {
    get onThread() {
      return !gaveUp
    },
    onGaveUp(listener) {
      gaveUpListener = listener
    },
    retryThread() {
      if (!gaveUp || closed || (current !== undefined && !current.retired)) return
      startFailures = 0
      spawn()
    },
    commit: (batch) => request({ type: 'Commit', batch }),
    deleteEvents: (community, ids) => request({ type: 'Delete', community, ids }),
    setAutoCheckpoint(pages) {
      autoCheckpointPages = pages
      if (current && !current.retired) current.worker.postMessage({ type: 'AutoCheckpoint', pages } satisfies WorkerInbox)
    },
    catchUpCheckpoint() {
      if (current?.ready && !current.retired) current.worker.postMessage({ type: 'CatchUpCheckpoint' } satisfies WorkerInbox)
    },
    stats: () => ({ respawns, synchronous }),
    crashOnNextCommitForTest: () => current?.worker.postMessage({ type: 'CrashOnNextCommit' } satisfies WorkerInbox),
    async close() {
      closed = true
      if (sent.size > 0 || waiting.length > 0) {
        let timer: ReturnType<typeof setTimeout> | undefined
        const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_DEADLINE_MS)))
        await Promise.race([new Promise<void>((resolve) => (onDrained = resolve)), deadline])
        clearTimeout(timer)
      }
      const stuck = [...waiting.splice(0), ...sent.values()]
      sent.clear()
      if (stuck.length > 0)
        log?.error(
          { requests: stuck.length, deadlineMs: CLOSE_DEADLINE_MS },
          'event store: the writer thread did not answer before close; stopped',
        )
      for (const req of stuck)
        req.reject(new StoreError(`event store ${whatOf(req.work)} failed: the store closed before the writer thread answered`))
      await current?.worker.terminate()
    },
  }
}
