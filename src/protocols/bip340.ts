// BIP-340 Schnorr signing; every signature in src/ goes through here. libsecp256k1 compiled to WASM
// (tiny-secp256k1, a dependency every install has; the relay's WASM verifier is the same module) signs faster
// than @noble/curves' arithmetic in JavaScript and leaves no garbage on the JavaScript heap: noble allocates
// BigInts and points for every signature, which a relay signing departures for many agents paid in
// scavenges. An agent signs a heartbeat every 15 s and three events on every connect, and one process may
// run thousands of agents. The x-only public key is derived once per key, and the signature is not verified
// again: the relay verifies every event it receives, so a signature spoiled by a hardware fault is refused with
// `invalid:`, not believed. The algorithm is BIP-340's (same nonce derivation as noble's, so the same aux bytes
// give the same signature: the tests hold it to noble's output byte for byte).
import { equalBytes } from '@noble/curves/utils.js'
import { randomBytes } from '@noble/hashes/utils.js'
import { isPrivate, signSchnorr, verifySchnorr, xOnlyPointFromScalar } from 'tiny-secp256k1'

/** A secret key ready to sign, and its x-only public key. */
export interface Bip340Key {
  /** a copy of the secret key it was derived from */
  secretKey: Uint8Array
  publicKey: Uint8Array
}

/** Throws for a secret key that is not 32 bytes or not in [1, n-1]. */
export function toBip340Key(secretKey: Uint8Array): Bip340Key {
  if (secretKey.length !== 32) throw new Error('secretKey must be 32 bytes')
  if (!isPrivate(secretKey)) throw new Error('secretKey must be in [1, n-1]')
  const copy = Uint8Array.from(secretKey)
  // tiny-secp256k1 returns copies of its WASM buffers (which it zeroes), not views into them
  return { secretKey: copy, publicKey: xOnlyPointFromScalar(copy) }
}

/** BIP-340 signature of `message` (an event id or an attestation digest: 32 bytes); `auxRand` as in BIP-340 (fresh randomness by default). */
export function signBip340(key: Bip340Key, message: Uint8Array, auxRand: Uint8Array = randomBytes(32)): Uint8Array {
  return signSchnorr(message, key.secretKey, auxRand)
}

/**
 * BIP-340 verification of `signature` over `message` (32 bytes) by the x-only `publicKey`, with the same
 * libsecp256k1 WASM: false, never a throw, for a key off the curve or inputs of the wrong length.
 */
export function verifyBip340(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean {
  try {
    return verifySchnorr(message, publicKey, signature)
  } catch {
    return false
  }
}

// per secret-key object; the copy inside each entry catches a key changed in place after its first use
const derived = new WeakMap<Uint8Array, Bip340Key>()

/** The Bip340Key of `secretKey`, derived on its first use. */
export function bip340KeyOf(secretKey: Uint8Array): Bip340Key {
  const known = derived.get(secretKey)
  if (known && equalBytes(known.secretKey, secretKey)) return known
  const key = toBip340Key(secretKey)
  derived.set(secretKey, key)
  return key
}
