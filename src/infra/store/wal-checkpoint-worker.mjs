// Worker thread: checkpoints an SQLite WAL from its own connection so the fsync and page copying of a
// checkpoint never run on the event loop (measured: automatic checkpoints halved commit throughput there).
import { createRequire } from 'node:module'
import { parentPort, workerData } from 'node:worker_threads'
import { lowerThreadPriority } from '../thread-priority.mjs'

const priorityError = lowerThreadPriority(workerData.nice)
if (priorityError) parentPort.postMessage({ type: 'priority', message: priorityError })
const require = createRequire(import.meta.url)
const Database = require('better-sqlite3')
const db = new Database(workerData.file)
db.pragma('busy_timeout = 5000')

function checkpoint(mode) {
  try {
    return db.pragma(`wal_checkpoint(${mode})`)[0]
  } catch (error) {
    parentPort.postMessage({ type: 'error', message: String(error) })
    return undefined
  }
}

// SQLite restarts the WAL from its first frame only when the writer begins a transaction with every frame
// already checkpointed. Under a steady write load a commit always lands while this pass copies, so the WAL
// grew without end (1.4 GB after 10 s at 3,000 events/s). A pass that copied all it saw, on a WAL past
// restartFrames, asks the writer to copy the few frames written since: its next commit then restarts the WAL.
function pass() {
  const copiedAll = (r) => r !== undefined && r.busy === 0 && r.checkpointed === r.log
  const first = checkpoint('PASSIVE')
  if (!copiedAll(first) || first.log < workerData.restartFrames) return
  // a second pass copies what was written during the first, so the writer's part (it waits on it) is small
  if (copiedAll(checkpoint('PASSIVE'))) parentPort.postMessage({ type: 'catch-up' })
}

const timer = setInterval(pass, workerData.intervalMs)
parentPort.on('message', (msg) => {
  if (msg?.type !== 'stop') return
  clearInterval(timer)
  checkpoint('TRUNCATE')
  db.close()
  parentPort.postMessage({ type: 'stopped' })
})
parentPort.postMessage({ type: 'ready' })
