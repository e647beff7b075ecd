// Verifier pool (docs/architecture.md §9): Schnorr verification is the ingest ceiling, so it runs off the event loop.
// State: one slot per worker thread with its in-flight requests, plus the not-yet-dispatched queue.
// Crash policy: a worker that errors or exits is replaced at once; its in-flight requests are retried once
// on another worker, then rejected with VerifierError. Workers that die before reporting Ready
// `maxStartFailures` times in a row mark the pool unavailable instead of respawning forever, and it says so
// (`onUnavailable`): the node's verifier actor (src/actors/node) then starts a new pool after a backoff.
import { Worker } from 'node:worker_threads'
import type { NostrEvent } from '../../protocols/nip01/event.js'
import { type Verifier, VerifierError, type VerifyVerdict } from './verifier.js'
// Extension needed: verify-core is plain JS so worker threads can load it without a TypeScript loader.
import { checkEvent, loadSchnorr, preimageOf } from './verify-core.mjs'

/**
 * Messages the pool sends to a worker (verify-worker.mjs). A batch is flat strings: id, pubkey, sig and the
 * id's preimage of each event in turn. A string clones as one copy; an event is an object graph (a kind 3:
 * hundreds of small arrays) that the clone walks on the event loop and the worker rebuilds, only to serialize
 * it again for the hash.
 */
type WorkerInbox = { type: 'Batch'; seqs: number[]; signed: string[] } | { type: 'CrashOnNextBatch' } | { type: 'Stop' }
/** Messages a worker sends back. */
type WorkerOutbox = { type: 'Ready'; priorityError?: string } | { type: 'Verdicts'; seqs: number[]; verdicts: VerifyVerdict[] }

export interface VerifierPoolOptions {
  threads: number
  /**
   * Most events in one postMessage. 64 makes the message cost a small fraction of a batch's Schnorr work,
   * while keeping one batch small enough that two workers share a burst evenly.
   */
  maxBatchSize?: number
  /** added to each worker's nice value (Linux; config threads.writePathNice, see thread-priority.mjs) */
  nice?: number
  /** the workers' Schnorr backend (verify-core's loadSchnorr); default: what 'auto' finds */
  backend?: 'native' | 'wasm'
  log?: { error(obj: object, msg: string): void }
  /** called once, if the pool gives up after start (its workers keep failing to start); not on a failed start */
  onUnavailable?: (error: VerifierError) => void
}

export interface VerifierPoolStats {
  respawns: number
  retries: number
  queued: number
  inFlight: number
}

export interface VerifierPool extends Verifier {
  readonly backend: 'native' | 'wasm'
  stats(): VerifierPoolStats
  /** Test hook: worker `index` calls process.exit when its next batch arrives, losing that batch. */
  crashWorkerOnNextBatchForTest(index: number): void
}

type Request = {
  seq: number
  event: NostrEvent
  attempts: number
  resolve: (v: VerifyVerdict) => void
  reject: (e: VerifierError) => void
}
type Slot = { index: number; worker: Worker; inFlight: Map<number, Request>; ready: boolean; retired: boolean }

// The worker is plain JS: dropping the parent's execArgv (spawn below) keeps tsx's loader (and esbuild) out of
// every worker under `npm start` (the pool is ready sooner), and workers start alike
// under tsx, vitest and bare node.
const workerUrl = new URL('./verify-worker.mjs', import.meta.url)
// Workers are stopped by a message, and exit between messages. Worker.terminate() stops a thread wherever it is,
// and the native verifier (bcrypto) aborts the whole process when a Node-API call fails because its thread
// is being terminated (seen in CI: an assertion in its context creation). Past this grace, terminate() anyway.
const stopGraceMs = 2_000
// A worker that cannot even load (missing WASM, bad deploy) fails the same way every time.
const maxStartFailures = 3
// Each request may ride on two workers: one retry absorbs a random crash; a second death suggests the event
// itself kills workers, and retrying it again would let one client take down the pool in a loop.
const maxAttempts = 2

/** Resolves once the worker has exited (at once if it already has). */
function stop(worker: Worker): Promise<void> {
  if (worker.threadId === -1) return Promise.resolve()
  return new Promise((resolve) => {
    const force = setTimeout(() => void worker.terminate(), stopGraceMs)
    worker.once('exit', () => {
      clearTimeout(force)
      resolve()
    })
    worker.postMessage({ type: 'Stop' } satisfies WorkerInbox)
  })
}

export async function createVerifierPool(opts: VerifierPoolOptions): Promise<VerifierPool> {
  const { threads } = opts
  const maxBatchSize = opts.maxBatchSize ?? 64
  const backend = opts.backend ?? loadSchnorr('auto').name
  // verdicts on the event loop are only ever for malformed events (see dispatch), decided before any curve math
  const schnorr = loadSchnorr('wasm')
  if (!Number.isInteger(threads) || threads < 1) throw new RangeError(`threads must be an integer ≥ 1: ${threads}`)
  if (!Number.isInteger(maxBatchSize) || maxBatchSize < 1) throw new RangeError('maxBatchSize must be ≥ 1')

  const slots: Slot[] = []
  const queue: Request[] = []
  let nextSeq = 0
  let flushScheduled = false
  let started = false
  let closed = false
  let unavailable: VerifierError | undefined
  let startFailures = 0
  let respawns = 0
  let retries = 0
  let onStartup: ((err?: unknown) => void) | undefined

  function spawn(index: number): void {
    const worker = new Worker(workerUrl, { execArgv: [], workerData: { nice: opts.nice, backend } })
    const slot: Slot = { index, worker, inFlight: new Map(), ready: false, retired: false }
    slot.worker.on('message', (msg: WorkerOutbox) => onWorkerMessage(slot, msg))
    // Node emits 'error' and then 'exit' for an uncaught exception; retire() acts on the first only.
    slot.worker.on('error', (err) => retire(slot, err))
    slot.worker.on('exit', (code) => retire(slot, new Error(`verifier worker exited with code ${code}`)))
    slots[index] = slot
  }

  function onWorkerMessage(slot: Slot, msg: WorkerOutbox): void {
    if (msg.type === 'Ready') {
      if (msg.priorityError) opts.log?.error({ err: msg.priorityError }, "verifier worker runs at the event loop's priority")
      slot.ready = true
      startFailures = 0
      onStartup?.()
      return
    }
    for (let i = 0; i < msg.seqs.length; i++) {
      const req = slot.inFlight.get(msg.seqs[i]!)
      if (!req) continue
      slot.inFlight.delete(req.seq)
      req.resolve(msg.verdicts[i]!)
    }
  }

  function retire(slot: Slot, cause: unknown): void {
    if (slot.retired) return
    slot.retired = true
    if (closed) return
    if (!slot.ready) startFailures++
    if (!started) {
      onStartup?.(cause)
      return
    }
    const orphans = [...slot.inFlight.values()]
    slot.inFlight.clear()
    if (startFailures >= maxStartFailures) {
      giveUp(cause, orphans)
      return
    }
    respawns++
    spawn(slot.index)
    const retryable = orphans.filter((req) => req.attempts < maxAttempts)
    for (const req of orphans) {
      if (req.attempts >= maxAttempts) {
        req.reject(new VerifierError('APIARY_VERIFIER_WORKER_DIED', 'verifier worker died twice', { cause }))
      }
    }
    if (retryable.length === 0) return
    retries += retryable.length
    // A warm worker answers sooner than the replacement, which still has to compile its WASM.
    dispatch(leastLoaded(threads > 1 ? slot.index : -1), retryable)
  }

  function giveUp(cause: unknown, orphans: Request[]): void {
    unavailable = new VerifierError('APIARY_VERIFIER_UNAVAILABLE', 'verifier workers keep failing to start', { cause })
    const err = unavailable
    for (const req of [...orphans, ...queue.splice(0), ...slots.flatMap((s) => [...s.inFlight.values()])]) {
      req.reject(err)
    }
    for (const s of slots) {
      s.retired = true
      void stop(s.worker)
    }
    opts.onUnavailable?.(err)
  }

  function leastLoaded(avoidIndex: number): Slot {
    let best: Slot | undefined
    for (const slot of slots) {
      if (slot.index === avoidIndex) continue
      if (!best || slot.inFlight.size < best.inFlight.size) best = slot
    }
    return best!
  }

  function dispatch(slot: Slot, reqs: Request[]): void {
    const seqs: number[] = []
    const signed: string[] = []
    for (const req of reqs) {
      const preimage = preimageOf(req.event)
      const sig: unknown = preimage === null ? undefined : req.event.sig
      if (preimage === null || typeof sig !== 'string') {
        // malformed: the same code as the workers answers here, so the verdict cannot depend on the side
        req.resolve(checkEvent(req.event, schnorr))
        continue
      }
      req.attempts++
      slot.inFlight.set(req.seq, req)
      seqs.push(req.seq)
      // preimageOf checked the id and pubkey are strings
      signed.push(req.event.id, req.event.pubkey, sig, preimage)
    }
    if (seqs.length > 0) slot.worker.postMessage({ type: 'Batch', seqs, signed } satisfies WorkerInbox)
  }

  function flush(): void {
    flushScheduled = false
    if (queue.length === 0 || closed || unavailable) return
    // Split evenly so a burst smaller than threads × maxBatchSize still uses every core.
    const size = Math.min(maxBatchSize, Math.ceil(queue.length / threads))
    while (queue.length > 0) dispatch(leastLoaded(-1), queue.splice(0, size))
  }

  function verify(event: NostrEvent): Promise<VerifyVerdict> {
    if (closed) return Promise.reject(new VerifierError('APIARY_VERIFIER_CLOSED', 'verifier is closed'))
    if (unavailable) return Promise.reject(unavailable)
    return new Promise((resolve, reject) => {
      queue.push({ seq: nextSeq++, event, attempts: 0, resolve, reject })
      // Enough to hand every worker a full batch: waiting longer only adds latency.
      if (queue.length >= maxBatchSize * threads) flush()
      else if (!flushScheduled) {
        flushScheduled = true
        // setImmediate, not a timer: everything a burst of socket reads enqueues lands in one flush.
        setImmediate(flush)
      }
    })
  }

  async function close(): Promise<void> {
    if (closed) return
    closed = true
    const err = new VerifierError('APIARY_VERIFIER_CLOSED', 'verifier closed before answering')
    for (const req of queue.splice(0)) req.reject(err)
    for (const slot of slots) {
      for (const req of slot.inFlight.values()) req.reject(err)
      slot.inFlight.clear()
    }
    await Promise.all(slots.map((s) => stop(s.worker)))
  }

  await new Promise<void>((resolve, reject) => {
    let readyCount = 0
    onStartup = (err) => {
      if (err === undefined) {
        if (++readyCount === threads) resolve()
        return
      }
      closed = true
      for (const s of slots) void stop(s.worker)
      reject(new VerifierError('APIARY_VERIFIER_UNAVAILABLE', 'verifier worker failed to start', { cause: err }))
    }
    for (let i = 0; i < threads; i++) spawn(i)
  })
  started = true
  onStartup = undefined

  return {
    threads,
    backend,
    verify,
    close,
    stats: () => ({
      respawns,
      retries,
      queued: queue.length,
      inFlight: slots.reduce((n, s) => n + s.inFlight.size, 0),
    }),
    crashWorkerOnNextBatchForTest(index) {
      slots[index]?.worker.postMessage({ type: 'CrashOnNextBatch' } satisfies WorkerInbox)
    },
  }
}
