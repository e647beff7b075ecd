import { Worker } from 'node:worker_threads'

/** How often the WAL is folded back: at ~20k events/s a second of WAL is a few MB, read cheaply by queries. */
const CHECKPOINT_INTERVAL_MS = 500
/** SQLite's default auto-checkpoint (pages), used again whenever the worker is not there to do it. */
export const AUTO_CHECKPOINT_PAGES = 1000

export interface WalCheckpointer {
  stop(): Promise<void>
}

/**
 * Moves WAL checkpoints off the writing connection: it stops auto-checkpointing (`autoCheckpoint(0)` sets the
 * wal_autocheckpoint of every connection that writes events) and a worker thread with its own connection
 * checkpoints every CHECKPOINT_INTERVAL_MS. If the worker fails, the writing connections auto-checkpoint
 * again, so the WAL can never grow without bound.
 */
export function startWalCheckpointer(
  file: string,
  autoCheckpoint: (pages: number) => void,
  log?: { error(o: object, m: string): void },
  /** added to the worker's nice value (Linux): checkpoints are background work */
  nice = 0,
): WalCheckpointer {
  autoCheckpoint(0)
  let fallenBack = false
  // terminate() ends the worker with exit code 1: a stop we asked for is not a failure
  let stopping = false
  const fallBack = (why: unknown) => {
    if (fallenBack || stopping) return
    fallenBack = true
    autoCheckpoint(AUTO_CHECKPOINT_PAGES)
    log?.error({ err: why }, 'event store: checkpoint worker failed; the writing connections checkpoint again')
  }
  const worker = new Worker(new URL('./wal-checkpoint-worker.mjs', import.meta.url), {
    workerData: { file, intervalMs: CHECKPOINT_INTERVAL_MS, nice },
    // a plain .mjs worker: no TypeScript loader needed (and none inherited)
    execArgv: [],
  })
  worker.unref()
  worker.on('message', (m: { type: string; message?: string }) => {
    if (m.type === 'error') log?.error({ err: m.message }, 'event store: checkpoint failed')
    if (m.type === 'priority') log?.error({ err: m.message }, "event store: checkpoint worker runs at the event loop's priority")
  })
  worker.on('error', fallBack)
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()))
  worker.once('exit', (code) => {
    if (code !== 0) fallBack(new Error(`checkpoint worker exited with ${code}`))
  })
  return {
    async stop() {
      stopping = true
      worker.postMessage({ type: 'stop' })
      const stopped = new Promise<void>((resolve) => worker.on('message', (m: { type: string }) => m.type === 'stopped' && resolve()))
      await Promise.race([stopped, exited])
      await worker.terminate()
    },
  }
}
