// Worker thread: checkpoints an SQLite WAL from its own connection so the fsync and page copying of a
// checkpoint never run on the event loop (automatic checkpoints there cost commit throughput dearly).
import { createRequire } from 'node:module'
import { parentPort, workerData } from 'node:worker_threads'
import { lowerThreadPriority, nameThisThread } from '../../thread-priority.mjs'

const priorityError = lowerThreadPriority(workerData.nice)
nameThisThread('apiary-ckpt')
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
// would grow without end. A pass that copied all it saw, on a WAL past
// restartFrames, asks the writer to copy the few frames written since: its next commit then restarts the WAL.
const MAX_EXTRA_PASSES = 3
/** 2 MiB of 4 KiB frames: a pass this short is mostly its two fsyncs */
const SMALL_PASS_FRAMES = 512

function pass() {
  const copiedAll = (r) => r !== undefined && r.busy === 0 && r.checkpointed === r.log
  const first = checkpoint('PASSIVE')
  if (!copiedAll(first) || first.log < workerData.restartFrames) return
  // Each further pass copies what was written during the one before, so the writer's part (commits wait on it)
  // shrinks to what a short pass lets through (its copy and two fsyncs stop the writer): up to three extra
  // passes, until one copied under SMALL_PASS_FRAMES, lower the open loop's OK tail (bench ingest).
  let last = first
  for (let n = 0; n < MAX_EXTRA_PASSES; n++) {
    const r = checkpoint('PASSIVE')
    if (!copiedAll(r)) return
    const copied = r.checkpointed - last.checkpointed
    last = r
    if (copied < SMALL_PASS_FRAMES) break
  }
  parentPort.postMessage({ type: 'catch-up' })
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
