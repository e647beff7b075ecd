// Node identity in the mesh. Every relay process makes a fresh keypair when it starts: its
// x-only public key (64 hex) is the process's *runtime id*. A restarted process is a new runtime, so a peer can
// never confuse the old incarnation's messages with the new one's (no incarnation numbers to race on).
//
// The relay key vouches for a runtime: it signs sha256("apiary-mesh-ready-v1\nruntime=<hex>\nrelay=<hex>").
// A peer accepts a runtime only when that attestation verifies against the relay pubkey *it* is configured
// with (its anchor): every node of one cluster shares one relay key, so a process holding only Redis write
// access, or a relay of another cluster on the same Redis, is refused.
import { schnorr } from '@noble/curves/secp256k1.js'
import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js'
import { bip340KeyOf, signBip340 } from '../bip340.js'
import { isHex64, isHex128 } from '../ids.js'
import type { SigningKey } from '../nip01/sign.js'
import { type Reason, reason } from '../reasons.js'
import { err, OK_VOID, type Result } from '../result.js'

export const ATTESTATION_CONTEXT = 'apiary-mesh-ready-v1'

/** The 32 bytes the relay key signs to vouch for `runtime`. */
export function attestationDigest(runtime: string, relay: string): Uint8Array {
  return sha256(new TextEncoder().encode(`${ATTESTATION_CONTEXT}\nruntime=${runtime}\nrelay=${relay}`))
}

/** The relay's signature (hex) over attestationDigest(runtime, relay pubkey). */
export function attestRuntime(relayKey: SigningKey, runtime: string): string {
  if (!isHex64(runtime)) throw new RangeError(`runtime id must be 64 lowercase hex digits: ${runtime.slice(0, 80)}`)
  return bytesToHex(signBip340(bip340KeyOf(relayKey.secretKey), attestationDigest(runtime, relayKey.pubkey)))
}

/** Accepts `signature` only as the anchor relay's attestation of `runtime`. */
export function checkAttestation(runtime: string, relay: string, signature: string, anchorRelayPubkey: string): Result<void> {
  if (!isHex64(runtime) || !isHex64(relay) || !isHex128(signature)) return refuse('malformed attestation')
  if (relay !== anchorRelayPubkey) return refuse('attested by another relay key')
  return verifies(signature, attestationDigest(runtime, relay), relay) ? OK_VOID : refuse('attestation does not verify')
}

/** BIP-340 verification that never throws (a malformed point or signature is simply false). */
export function verifies(signatureHex: string, message: Uint8Array, pubkeyHex: string): boolean {
  try {
    return schnorr.verify(hexToBytes(signatureHex), message, hexToBytes(pubkeyHex))
  } catch {
    return false
  }
}

function refuse(why: string): Result<never, Reason> {
  return err(reason('invalid', why))
}
