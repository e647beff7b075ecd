// State: none; the SQLite writer (infra/store/sqlite/sqlite-writer.ts) lives beside the actor, and writes go
// straight to it, never through a mailbox. Messages: GaveUp (its threads kept failing to start: writes run on
// the main thread meanwhile). Policy: permanent and never giving up, backoff 10 s → 5 min: a give-up is a
// crash, and each init asks the writer for a new thread, which takes the writes back once it is Ready.

import { StoreError } from '../../infra/store/event-store.js'
import type { WriterLifecycle } from '../../infra/store/sqlite/sqlite-writer.js'
import { type ActorDef, type Kernel, type SupervisionPolicy, type TypedRef, tell } from '../kernel/index.js'

export type StoreWriterMsg = { type: 'GaveUp' }

export const STORE_WRITER_PATH = 'node/store-writer'

export const storeWriterPolicy = {
  mode: 'permanent',
  // each try starts up to three threads and logs each failure while every write is served anyway: spaced out
  backoff: { minMs: 10_000, maxMs: 300_000, jitter: 0.2 },
  // never gives up: the writes go on on the main thread, so there is only something to retry, nothing to escalate
  maxRestarts: Number.MAX_SAFE_INTEGER,
  windowMs: 60_000,
} satisfies Partial<SupervisionPolicy>

/** Spawns the actor that brings the writer's thread back after it gave up; it stops with the kernel. */
export function spawnStoreWriter(
  kernel: Kernel,
  writer: WriterLifecycle,
  opts: { policy?: Partial<SupervisionPolicy> } = {},
): TypedRef<StoreWriterMsg> {
  const def: ActorDef<null, StoreWriterMsg> = {
    kind: 'store-writer',
    supervisor: 'node',
    policy: { ...storeWriterPolicy, ...opts.policy },
    // every write is still served while it waits: readiness does not name it
    unreadyWhileRestarting: false,
    // the first init too: the writer may have given up at start, before this actor existed
    init: () => {
      if (!writer.onThread) writer.retryThread()
      return null
    },
    handle: () => {
      throw new StoreError('the SQLite writer threads keep failing to start: writing on the main thread until one starts')
    },
  }
  const ref = kernel.spawn(STORE_WRITER_PATH, def)
  writer.onGaveUp(() => tell(ref, { type: 'GaveUp' }))
  return ref
}
