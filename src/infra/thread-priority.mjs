// Lowers the calling worker thread's scheduling priority (docs/architecture.md §9). Plain .mjs so every
// worker (verifier, SQLite writer, readers, checkpointer) loads it under tsx, vitest and bare node alike.
//
// Why: on a machine whose cores are all busy, the event loop shares a core with the workers on equal terms,
// and each wake-up of a worker (a postMessage, a finished batch) can preempt it. The main thread decides
// everything and holds every connection, so its lateness is every client's latency; the workers' work is
// bulk that can wait a few milliseconds. Workers at nice +5 and readers at +10 shorten the event loop's delay
// tail under ingest with reads (the trade-off is in config.ts at `threads`).
import os from 'node:os'

/**
 * Adds `nice` (0..19) to this thread's nice value, relative to the thread that started it, at most 19.
 * Linux only: there setpriority acts on the calling thread; elsewhere it would act on the whole process, the
 * event loop included, so nothing is changed. Returns why it could not, for the owner to log; undefined when
 * done or not asked for.
 */
export function lowerThreadPriority(nice) {
  if (!nice || process.platform !== 'linux') return undefined
  try {
    os.setPriority(0, Math.min(19, os.getPriority(0) + nice))
    return undefined
  } catch (error) {
    return `could not lower the thread's priority by ${nice}: ${error?.message ?? error}`
  }
}
