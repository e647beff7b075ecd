// Plain JavaScript on purpose: verify-worker.mjs imports this in a bare worker thread, where no TypeScript
// loader runs (vitest's fork has none and Node 20 cannot strip types). Types live in verify-core.d.mts.
// The in-thread verifier imports the same module, so pool and inline verdicts come from one implementation.
import { createHash } from 'node:crypto'
import { createRequire } from 'node:module'
import { verifySchnorr as verifyWasm } from 'tiny-secp256k1'

// NIP-01: ids, pubkeys and signatures are lowercase hex. Buffer.from(s, 'hex') silently stops at the first
// non-hex character, so the shape is checked before decoding. A copy of protocols/ids.ts: a bare worker can't load .ts.
const hex64 = /^[0-9a-f]{64}$/
const hex128 = /^[0-9a-f]{128}$/

/**
 * NIP-01 canonical serialization, the preimage of the event id. Duplicates the protocol module's
 * serializeEvent so this file stays loadable without a TypeScript loader.
 */
export function serializeForId(event) {
  return JSON.stringify([0, event.pubkey, event.created_at, event.kind, event.tags, event.content])
}

/**
 * The fields the id commits to must have their NIP-01 types: otherwise JSON.stringify would happily serialize
 * `undefined` as null and a signer could get a malformed event certified.
 */
export function hasIdFields(event) {
  if (typeof event !== 'object' || event === null) return false
  if (typeof event.pubkey !== 'string' || typeof event.content !== 'string') return false
  if (!Number.isSafeInteger(event.created_at) || !Number.isSafeInteger(event.kind)) return false
  if (!Array.isArray(event.tags)) return false
  for (const tag of event.tags) {
    if (!Array.isArray(tag)) return false
    for (const item of tag) if (typeof item !== 'string') return false
  }
  return true
}

/**
 * BIP-340 verification, (digest, x-only pubkey, sig) as Buffers → boolean, by backend:
 * - 'native': libsecp256k1 compiled into bcrypto's addon (an optional dependency built by node-gyp at
 *   install), several times faster than
 * - 'wasm': libsecp256k1 compiled to WASM (tiny-secp256k1), which every install has.
 * 'auto' takes native when its addon loads, else wasm; `fallback` then says why. Asking for 'native' where it
 * cannot load throws: an operator who pinned it wants to hear, not to run several times slower.
 */
export function loadSchnorr(choice) {
  if (choice === 'wasm') return { name: 'wasm', verify: verifyWasm }
  try {
    // bcrypto is CommonJS and optional; its schnorr module is BIP-340 on the addon's libsecp256k1
    const native = createRequire(import.meta.url)('bcrypto/lib/schnorr')
    // bcrypto creates its libsecp256k1 context on first use, and aborts the process if that Node-API call
    // fails, as it does in a thread being terminated: made here, while the module loads, it never happens
    // in a batch (the pool stops workers between messages, not while they load).
    native.verify(Buffer.alloc(32), Buffer.alloc(64), Buffer.alloc(32))
    return { name: 'native', verify: (digest, pubkey, sig) => native.verify(digest, sig, pubkey) }
  } catch (error) {
    if (choice === 'native') throw new Error(`native Schnorr verifier (bcrypto) does not load: ${error.message}`)
    return { name: 'wasm', verify: verifyWasm, fallback: String(error.message).split('\n')[0] }
  }
}

/** Verdict for one event with node:crypto sha256 and `schnorr` (loadSchnorr); never throws. */
export function checkEvent(event, schnorr) {
  const preimage = preimageOf(event)
  if (preimage === null) return 'bad-id'
  return checkSigned(event.id, event.pubkey, event.sig, preimage, schnorr)
}

/**
 * The id's preimage (serializeForId) when the id fields have their NIP-01 types and the id is a string, else
 * null (the verdict is 'bad-id'). The pool computes it on the event loop and sends workers strings only.
 */
export function preimageOf(event) {
  try {
    return hasIdFields(event) && typeof event.id === 'string' ? serializeForId(event) : null
  } catch {
    return null
  }
}

/** Verdict for a preimage and the id, pubkey and sig claimed for it (checkEvent's second half); never throws. */
export function checkSigned(id, pubkey, sig, preimage, schnorr) {
  let digest
  try {
    // node:crypto hashes several times faster than @noble/hashes
    digest = createHash('sha256').update(preimage).digest()
    if (digest.toString('hex') !== id) return 'bad-id'
  } catch {
    return 'bad-id'
  }
  if (typeof sig !== 'string' || typeof pubkey !== 'string' || !hex64.test(pubkey) || !hex128.test(sig)) return 'bad-sig'
  try {
    return schnorr.verify(digest, Buffer.from(pubkey, 'hex'), Buffer.from(sig, 'hex')) ? 'ok' : 'bad-sig'
  } catch {
    // both backends throw rather than answer false on some malformed points; a verdict is all we owe
    return 'bad-sig'
  }
}
