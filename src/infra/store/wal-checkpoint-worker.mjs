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
    db.pragma(`wal_checkpoint(${mode})`)
  } catch (error) {
    parentPort.postMessage({ type: 'error', message: String(error) })
  }
}

const timer = setInterval(() => checkpoint('PASSIVE'), workerData.intervalMs)
parentPort.on('message', (msg) => {
  if (msg?.type !== 'stop') return
  clearInterval(timer)
  checkpoint('TRUNCATE')
  db.close()
  parentPort.postMessage({ type: 'stopped' })
})
parentPort.postMessage({ type: 'ready' })
