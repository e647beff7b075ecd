// SQLite writer thread, main side: the event store's batch transactions and deletions run on one worker
// thread with its own connection (sqlite-write-worker.mjs), so a commit never holds the event loop. SQLite
// has one writer: every write goes to this thread, which runs them in the order they were sent.
// State: the thread, the requests it was sent and has not answered (in order), and its start failures.
// Crash policy: a thread that errors or exits fails every request it had (its open transaction rolled back,
// but one it had committed may not have been answered: the outcome is unknown, and the error says so) and is
// replaced at once. Threads that die before reporting Ready `MAX_START_FAILURES` times in a row make the
// writer give up (`usable` false): the store then writes on the main thread again, as an in-memory one does.
import { Worker } from 'node:worker_threads'
import { type SaveOutcome, StoreError } from './event-store.js'
// Extension needed: plain JS shared with the writer thread, which runs without a TypeScript loader.
import type { SavePlan } from './sqlite-write-core.mjs'

/** Messages to the thread. */
type WorkerInbox =
  | { type: 'Commit'; id: number; batch: readonly SavePlan[] }
  | { type: 'Delete'; id: number; community: string; ids: readonly string[] }
  | { type: 'AutoCheckpoint'; pages: number }
  | { type: 'CrashOnNextCommit' }
/** Messages the thread sends back. */
type WorkerOutbox = { type: 'Ready' } | { type: 'Done'; id: number; ok: true; result: unknown } | { type: 'Done'; id: number; ok: false; message: string }

export interface SqliteWriterOptions {
  file: string
  /** the thread connection's wal_autocheckpoint (0 while a checkpoint worker does it) */
  autoCheckpointPages: number
  log?: { error(obj: object, msg: string): void }
}

export interface SqliteWriter {
  /** false once threads kept failing to start: write on the main thread */
  readonly usable: boolean
  /** one transaction; one outcome per plan; rejects with StoreError */
  commit(batch: readonly SavePlan[]): Promise<SaveOutcome[]>
  deleteEvents(community: string, ids: readonly string[]): Promise<string[]>
  setAutoCheckpoint(pages: number): void
  stats(): { respawns: number }
  /** Test hook: the thread calls process.exit when the next batch arrives, losing it. */
  crashOnNextCommitForTest(): void
  /** after the requests already sent are answered, ends the thread */
  close(): Promise<void>
}

type Request = { what: string; resolve: (result: unknown) => void; reject: (err: StoreError) => void }

// A thread that cannot even open the file (deleted, permissions) fails the same way every time.
const MAX_START_FAILURES = 3

const workerUrl = new URL('./sqlite-write-worker.mjs', import.meta.url)

export function createSqliteWriter(opts: SqliteWriterOptions): SqliteWriter {
  const { file, log } = opts
  let autoCheckpointPages = opts.autoCheckpointPages
  const sent = new Map<number, Request>()
  let nextId = 0
  let startFailures = 0
  let respawns = 0
  let gaveUp = false
  let closed = false
  let onDrained: (() => void) | undefined
  let current = spawn()

  function spawn(): { worker: Worker; ready: boolean; retired: boolean } {
    // a plain .mjs worker: no TypeScript loader needed (and none inherited)
    const worker = new Worker(workerUrl, { workerData: { file, autoCheckpointPages }, execArgv: [] })
    // referenced only while it owes an answer: an idle writer does not keep the process alive
    worker.unref()
    const thread = { worker, ready: false, retired: false }
    worker.on('message', (msg: WorkerOutbox) => {
      if (msg.type === 'Ready') {
        thread.ready = true
        startFailures = 0
        return
      }
      const req = sent.get(msg.id)
      if (!req) return
      settle(msg.id)
      if (msg.ok) req.resolve(msg.result)
      else req.reject(new StoreError(`event store ${req.what} failed`, { cause: new Error(msg.message) }))
    })
    // Node emits 'error' and then 'exit' for an uncaught exception; retire() acts on the first only.
    worker.on('error', (err) => retire(thread, err))
    worker.on('exit', (code) => retire(thread, new Error(`writer thread exited with code ${code}`)))
    return thread
  }

  function settle(id: number): void {
    sent.delete(id)
    if (sent.size > 0) return
    current.worker.unref()
    onDrained?.()
  }

  function retire(thread: ReturnType<typeof spawn>, cause: unknown): void {
    if (thread.retired) return
    thread.retired = true
    for (const [id, req] of [...sent]) {
      settle(id)
      req.reject(new StoreError(`event store ${req.what} failed: the writer thread stopped, so its outcome is unknown`, { cause }))
    }
    if (closed) return
    if (!thread.ready && ++startFailures >= MAX_START_FAILURES) {
      gaveUp = true
      log?.error({ err: cause }, 'event store: the writer thread keeps failing to start; writing on the main thread')
      return
    }
    log?.error({ err: cause }, 'event store: the writer thread died; replacing it')
    respawns++
    current = spawn()
  }

  function request<T>(what: string, msg: (id: number) => WorkerInbox): Promise<T> {
    if (closed) return Promise.reject(new StoreError('event store is closed'))
    if (gaveUp) return Promise.reject(new StoreError(`event store ${what} failed: no writer thread could start`))
    const id = nextId++
    return new Promise<T>((resolve, reject) => {
      sent.set(id, { what, resolve: resolve as (r: unknown) => void, reject })
      current.worker.ref()
      current.worker.postMessage(msg(id))
    })
  }

  return {
    get usable() {
      return !gaveUp
    },
    commit: (batch) => request('write', (id) => ({ type: 'Commit', id, batch })),
    deleteEvents: (community, ids) => request('delete', (id) => ({ type: 'Delete', id, community, ids })),
    setAutoCheckpoint(pages) {
      autoCheckpointPages = pages
      if (!gaveUp) current.worker.postMessage({ type: 'AutoCheckpoint', pages } satisfies WorkerInbox)
    },
    stats: () => ({ respawns }),
    crashOnNextCommitForTest: () => current.worker.postMessage({ type: 'CrashOnNextCommit' } satisfies WorkerInbox),
    async close() {
      closed = true
      if (sent.size > 0) await new Promise<void>((resolve) => (onDrained = resolve))
      await current.worker.terminate()
    },
  }
}
