// Verifier worker thread. State: one test flag. Inbox: VerifierPoolInbox (see verifier-pool.ts): 'Batch' is
// answered with one 'Verdicts' message in the same order; 'Stop' ends the thread; 'CrashOnNextBatch' is a
// documented test hook.
// Crash policy: none here; per-event errors become verdicts, and the pool replaces a worker that exits.
// Plain .mjs so it loads in a bare worker under both tsx and vitest (see verify-core.mjs).
import { parentPort, workerData } from 'node:worker_threads'
import { lowerThreadPriority, nameThisThread } from '../thread-priority.mjs'
import { checkSigned, loadSchnorr } from './verify-core.mjs'

const priorityError = lowerThreadPriority(workerData?.nice)
nameThisThread('apiary-verify')
// throws where the pool asked for 'native' and the addon does not load here: the pool sees a start failure
const schnorr = loadSchnorr(workerData?.backend ?? 'wasm')

let crashOnNextBatch = false

parentPort.on('message', (msg) => {
  switch (msg.type) {
    case 'Batch':
      // test hook: dies holding a whole batch in flight, so the pool's retry path is exercised for real
      if (crashOnNextBatch) process.exit(70)
      parentPort.postMessage({ type: 'Verdicts', seqs: msg.seqs, verdicts: verdictsOf(msg.signed) })
      return
    case 'CrashOnNextBatch':
      crashOnNextBatch = true
      return
    // between messages no native call is running (see stopGraceMs in verifier-pool.ts)
    case 'Stop':
      process.exit(0)
  }
})

/** `signed` holds id, pubkey, sig and preimage of each event in turn (see verifier-pool.ts). */
function verdictsOf(signed) {
  const verdicts = new Array(signed.length / 4)
  for (let i = 0; i < verdicts.length; i++)
    verdicts[i] = checkSigned(signed[4 * i], signed[4 * i + 1], signed[4 * i + 2], signed[4 * i + 3], schnorr)
  return verdicts
}

// Sent once the backend has loaded (and tiny-secp256k1 has compiled its WASM), so the pool only counts a worker
// that can verify.
parentPort.postMessage({ type: 'Ready', priorityError })
