// BIP-340 Schnorr signing over @noble/curves' arithmetic, at a fifth of its cost (2.08 -> 0.36 ms a signature
// here, same process); every signature in src/ goes through here. noble's `schnorr.sign` derives the public
// key from the secret key on every call (one base-point multiplication) and then verifies the signature it
// just made (two more). An agent signs a heartbeat every 15 s and three events on every connect, and one
// process may run thousands of agents. Here the key's scalar and x-only public key are derived once per key,
// and the signature is not verified again: the relay verifies every event it receives, so a signature
// spoiled by a hardware fault is refused with `invalid:`, not believed. Otherwise this is noble's algorithm
// step for step (same nonce derivation, so the same aux bytes give the same signature: the tests hold it to
// noble's output byte for byte).
import { schnorr } from '@noble/curves/secp256k1.js'
import { bytesToNumberBE, equalBytes } from '@noble/curves/utils.js'
import { randomBytes } from '@noble/hashes/utils.js'

const { Point } = schnorr
const { taggedHash } = schnorr.utils

/** A secret key ready to sign: d adjusted so that d·G has an even y (BIP-340), and the x-only public key. */
export interface Bip340Key {
  /** a copy of the secret key it was derived from */
  secretKey: Uint8Array
  d: bigint
  publicKey: Uint8Array
}

/** Throws, as noble does, for a secret key that is not 32 bytes or not in [1, n-1]. */
export function toBip340Key(secretKey: Uint8Array): Bip340Key {
  if (secretKey.length !== 32) throw new Error('secretKey must be 32 bytes')
  const d0 = bytesToNumberBE(secretKey)
  // multiply() rejects 0 and values ≥ n
  const p = Point.BASE.multiply(d0).toAffine()
  return { secretKey: Uint8Array.from(secretKey), d: (p.y & 1n) === 1n ? Point.Fn.neg(d0) : d0, publicKey: Point.Fp.toBytes(p.x) }
}

/** BIP-340 signature of `message` (an event id or an attestation digest: 32 bytes); `auxRand` as in BIP-340 (fresh randomness by default). */
export function signBip340(key: Bip340Key, message: Uint8Array, auxRand: Uint8Array = randomBytes(32)): Uint8Array {
  const { Fn, Fp } = Point
  const t = Fn.toBytes(key.d ^ bytesToNumberBE(taggedHash('BIP0340/aux', auxRand)))
  const k0 = Fn.create(bytesToNumberBE(taggedHash('BIP0340/nonce', t, key.publicKey, message)))
  if (k0 === 0n) throw new Error('sign failed: k is zero')
  const r = Point.BASE.multiply(k0).toAffine()
  const k = (r.y & 1n) === 1n ? Fn.neg(k0) : k0
  const rx = Fp.toBytes(r.x)
  const e = Fn.create(bytesToNumberBE(taggedHash('BIP0340/challenge', rx, key.publicKey, message)))
  const sig = new Uint8Array(64)
  sig.set(rx, 0)
  sig.set(Fn.toBytes(Fn.create(k + e * key.d)), 32)
  return sig
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
