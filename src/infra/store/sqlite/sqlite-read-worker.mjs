// SQLite read worker thread. State: its own read-only connection and statement cache. Inbox (see
// sqlite-read-pool.ts): 'Read' is answered with one 'Answer' (results or an error message); 'CrashOnNextRead'
// is a documented test hook. Crash policy: none here; a statement error becomes an Answer, and the pool
// replaces a worker that exits (or that it stopped for passing its budget).
// Plain .mjs so it loads in a bare worker under tsx, vitest and node alike (see sqlite-read-core.mjs).
import { createRequire } from 'node:module'
import { parentPort, workerData } from 'node:worker_threads'
import { lowerThreadPriority, nameThisThread } from '../../thread-priority.mjs'
import { ReadBudgetExceeded } from '../read-budget.mjs'
import { createReadRunner } from './sqlite-read-core.mjs'

const priorityError = lowerThreadPriority(workerData.nice)
nameThisThread('apiary-reader')
const require = createRequire(import.meta.url)
const Database = require('better-sqlite3')
// WAL: this connection reads while the main thread's connection commits; readonly, so it can never write
const db = new Database(workerData.file, { readonly: true })
// a reader meets a lock only briefly (WAL recovery, another process's exclusive lock); same wait as the writer
db.pragma('busy_timeout = 5000')
// each read carries its budget (rows, and a deadline the pool set when the read was asked for: Date.now() is
// one clock for every thread); the pool's timer is the backstop: it terminates the thread
const runner = createReadRunner(db)
let crashOnNextRead = false

parentPort.on('message', (msg) => {
  switch (msg.type) {
    case 'Read':
      // test hook: dies holding a read in flight, so the pool's crash path is exercised for real
      if (crashOnNextRead) process.exit(70)
      try {
        // a read that spent its budget waiting for this worker is refused without running
        if (Date.now() > msg.budget.deadlineMs) throw new ReadBudgetExceeded('time', 0)
        parentPort.postMessage({ type: 'Answer', id: msg.id, ok: true, results: runner.run(msg.batch, msg.budget) })
      } catch (error) {
        const message = String(error?.message ?? error)
        // a read stopped by its own budget frees this worker at once: no terminate, no respawn
        const over = error instanceof ReadBudgetExceeded ? error.toOver() : undefined
        parentPort.postMessage({ type: 'Answer', id: msg.id, ok: false, message, over })
      }
      return
    case 'CrashOnNextRead':
      crashOnNextRead = true
      return
  }
})

// after the connection opened: a worker that cannot open the file never counts as started
parentPort.postMessage({ type: 'Ready', priorityError })
