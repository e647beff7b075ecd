import { Worker } from 'node:worker_threads'

/**
 * How often the WAL is folded back. A pass copies the pages committed since the last one and fsyncs the
 * database file, and the writer's commits run slower while it does (the same disk, the same cores), so the
 * open loop's slow OKs fall inside passes. Shorter intervals make shorter passes and a lower OK tail at the
 * same CPU per event (bench ingest-pipelined); 100 ms does no better than 150.
 */
export const CHECKPOINT_INTERVAL_MS = 150
/** SQLite's default auto-checkpoint (pages), used again whenever the worker is not there to do it. */
export const AUTO_CHECKPOINT_PAGES = 1000
/**
 * A WAL this long (frames, 4 KiB pages: 64 MiB) is restarted after the next pass that copied it all (and up to
 * three shorter ones): the writer copies what the last pass left, and its next commit starts the WAL over.
 * With passes every 150 ms, a 4,096-frame threshold has the writer catch up after nearly every pass, which
 * costs ingest throughput and leaves the open loop's tail the same.
 */
export const RESTART_FRAMES = 16_384

export interface WalCheckpointer {
  stop(): Promise<void>
}

/**
 * Moves WAL checkpoints off the writing connection: it stops auto-checkpointing (`autoCheckpoint(0)` sets the
 * wal_autocheckpoint of every connection that writes events) and a worker thread with its own connection
 * checkpoints every CHECKPOINT_INTERVAL_MS. Only the writing connection can restart the WAL, so past
 * RESTART_FRAMES the worker asks it (`catchUp`) to copy the last frames itself. If the worker fails, the
 * writing connections auto-checkpoint again, so the WAL can never grow without bound.
 */
export function startWalCheckpointer(
  file: string,
  autoCheckpoint: (pages: number) => void,
  /** the writing connection checkpoints what is left, between two commits (see RESTART_FRAMES) */
  catchUp: () => void,
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
    workerData: { file, intervalMs: CHECKPOINT_INTERVAL_MS, restartFrames: RESTART_FRAMES, nice },
    // a plain .mjs worker: no TypeScript loader needed (and none inherited)
    execArgv: [],
  })
  worker.unref()
  worker.on('message', (m: { type: string; message?: string }) => {
    if (m.type === 'catch-up') catchUp()
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
