// SQLite writer thread. State: the one connection that writes events, and its prepared statements. Inbox (see
// sqlite-writer.ts), handled strictly in arrival order: 'Commit' (one batch transaction) and 'Delete' are
// each answered with one 'Done'; 'AutoCheckpoint' sets this connection's wal_autocheckpoint; 'CatchUpCheckpoint'
// checkpoints from this connection, so its next commit can restart the WAL (wal-checkpointer.ts); 'CrashOnNextCommit'
// is a documented test hook. Crash policy: none here; a failed statement becomes a 'Done' with its message
// (the transaction rolled back), and the main thread replaces a thread that exits.
// Plain .mjs so it loads in a bare worker under tsx, vitest and node alike (see sqlite-write-core.mjs).
import { createRequire } from 'node:module'
import { parentPort, workerData } from 'node:worker_threads'
import { lowerThreadPriority, nameThisThread } from '../../thread-priority.mjs'
import { applyPragmas, createWriteRunner } from './sqlite-write-core.mjs'

const priorityError = lowerThreadPriority(workerData.nice)
nameThisThread('apiary-writer')
const require = createRequire(import.meta.url)
const Database = require('better-sqlite3')
const db = new Database(workerData.file)
applyPragmas(db, workerData.durability)
db.pragma(`wal_autocheckpoint = ${workerData.autoCheckpointPages}`)
const runner = createWriteRunner(db)
let crashOnNextCommit = false

const answer = (id, body) => {
  try {
    parentPort.postMessage({ type: 'Done', id, ok: true, result: body() })
  } catch (error) {
    // the SQLite code (SQLITE_BUSY, SQLITE_FULL, ...) tells the log what kind of failure it was
    parentPort.postMessage({
      type: 'Done',
      id,
      ok: false,
      message: String(error?.message ?? error),
      code: typeof error?.code === 'string' ? error.code : undefined,
    })
  }
}

parentPort.on('message', (msg) => {
  switch (msg.type) {
    case 'Commit':
      // test hook: dies with the batch in flight, so the main thread's crash path is exercised for real
      if (crashOnNextCommit) process.exit(70)
      answer(msg.id, () => runner.commit(msg.batch))
      return
    case 'Delete':
      answer(msg.id, () => runner.deleteEvents(msg.community, msg.ids))
      return
    case 'CatchUpCheckpoint':
      try {
        db.pragma('wal_checkpoint(PASSIVE)')
      } catch (error) {
        parentPort.postMessage({ type: 'CheckpointFailed', message: String(error?.message ?? error) })
      }
      return
    case 'AutoCheckpoint':
      db.pragma(`wal_autocheckpoint = ${msg.pages}`)
      return
    case 'CrashOnNextCommit':
      crashOnNextCommit = true
      return
  }
})

// after the connection opened: a thread that cannot open the file never counts as started. `synchronous` is the
// level its commits run at, read back from the connection, so the main thread reports what is in force.
parentPort.postMessage({ type: 'Ready', priorityError, synchronous: db.pragma('synchronous', { simple: true }) })
