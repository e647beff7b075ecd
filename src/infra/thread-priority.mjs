// Lowers the calling worker thread's scheduling priority (docs/architecture.md §9), and names it. Plain .mjs so every
// worker (verifier, SQLite writer, readers, checkpointer) loads it under tsx, vitest and bare node alike.
//
// Why: on a machine whose cores are all busy, the event loop shares a core with the workers on equal terms,
// and each wake-up of a worker (a postMessage, a finished batch) can preempt it. The main thread decides
// everything and holds every connection, so its lateness is every client's latency; the workers' work is
// bulk that can wait a few milliseconds. Workers at nice +5 and readers at +10 shorten the event loop's delay
// tail under ingest with reads (the trade-off is in config.ts at `threads`).
import { writeFileSync } from 'node:fs'
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

/**
 * Names the calling thread for the operating system (`top -H`, `ps -L`, /proc/<pid>/task/<tid>/comm): every
 * worker is otherwise "node", so a busy thread could not be told from another. Linux only (15 bytes at most);
 * best effort: a name that cannot be written changes nothing else.
 */
export function nameThisThread(name) {
  if (process.platform !== 'linux') return
  try {
    writeFileSync('/proc/thread-self/comm', name.slice(0, 15))
  } catch {}
}
