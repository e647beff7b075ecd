// In-thread verifiers. The libsecp256k1 one serves small deployments and tests that want no threads; the noble one
// is the reference implementation: pure JS from hash to curve, sharing only the field checks
// and the serialization with the libsecp256k1 path, so agreeing verdicts are evidence rather than tautology.
import { schnorr } from '@noble/curves/secp256k1.js'
import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js'
import { isHex64, isHex128 } from '../../protocols/ids.js'
import type { NostrEvent } from '../../protocols/nip01/event.js'
import { type Verifier, VerifierError, type VerifyVerdict } from './verifier.js'
// Extension needed: verify-core is plain JS so worker threads can load it without a TypeScript loader.
import { checkEvent, hasIdFields, loadSchnorr, type SchnorrChoice, serializeForId } from './verify-core.mjs'

const utf8 = new TextEncoder()

/** libsecp256k1 (native or WASM, see loadSchnorr) on the calling thread: blocks the event loop per event. */
export function createInlineVerifier(backend: SchnorrChoice = 'auto'): Verifier {
  const schnorr = loadSchnorr(backend)
  return inThread((event) => checkEvent(event, schnorr))
}

/** @noble/curves + @noble/hashes on the calling thread: slow, kept as the reference. */
export function createNobleVerifier(): Verifier {
  return inThread(checkEventNoble)
}

function checkEventNoble(event: NostrEvent): VerifyVerdict {
  let digest: Uint8Array
  try {
    if (!hasIdFields(event) || typeof event.id !== 'string') return 'bad-id'
    digest = sha256(utf8.encode(serializeForId(event)))
    if (bytesToHex(digest) !== event.id) return 'bad-id'
  } catch {
    return 'bad-id'
  }
  if (!isHex64(event.pubkey) || !isHex128(event.sig)) return 'bad-sig'
  try {
    return schnorr.verify(hexToBytes(event.sig), digest, hexToBytes(event.pubkey)) ? 'ok' : 'bad-sig'
  } catch {
    return 'bad-sig'
  }
}

function inThread(check: (event: NostrEvent) => VerifyVerdict): Verifier {
  let closed = false
  return {
    threads: 1,
    verify: async (event) => {
      if (closed) throw new VerifierError('APIARY_VERIFIER_CLOSED', 'verifier is closed')
      return check(event)
    },
    close: async () => {
      closed = true
    },
  }
}
