// The tunnel's opening: mutual proof of runtime keys before any other frame.
//
//   dialer   → Hello      { runtime, relay, attestation, nonce, to }        "I am R1, vouched for by the relay; you should be R2"
//   acceptor → Hello      { runtime, relay, attestation, nonce, proof }     proof = sig_R2(digest("acceptor", dialer's nonce, R2, R1))
//   dialer   → HelloProof { proof }                                          proof = sig_R1(digest("dialer", acceptor's nonce, R1, R2))
//
// Each side checks the other's attestation against its own anchor relay pubkey, then the proof over the nonce
// it chose itself, so a recorded handshake can't be replayed and neither side can be impersonated by someone
// who only copied a readiness record. The role is in the digest, so one side's proof is never valid as the
// other's. A dialer refuses an acceptor that is not the runtime it meant to dial (`to`): a stale record whose
// endpoint now belongs to another process leads to `Goodbye{stale}`, not to a link under the wrong name.
import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex } from '@noble/hashes/utils.js'
import { z } from 'zod'
import { bip340KeyOf, signBip340 } from '../bip340.js'
import type { SigningKey } from '../nip01/sign.js'
import { type Reason, reason } from '../reasons.js'
import { err, OK_VOID, ok, type Result } from '../result.js'
import { checkAttestation, verifies } from './attestation.js'
import { MESH_PROTOCOL_VERSION } from './frames.js'

const hex = (n: number) => z.string().regex(new RegExp(`^[0-9a-f]{${n}}$`))

const helloSchema = z.strictObject({
  v: z.literal(MESH_PROTOCOL_VERSION),
  runtime: hex(64),
  relay: hex(64),
  attestation: hex(128),
  nonce: hex(64),
  /** dialer only: the runtime it meant to reach */
  to: hex(64).optional(),
  /** acceptor only: its proof over the dialer's nonce */
  proof: hex(128).optional(),
})
const helloProofSchema = z.strictObject({ proof: hex(128) })

export type Hello = z.infer<typeof helloSchema>
export type HelloRole = 'dialer' | 'acceptor'

/** Who we are on the mesh: the runtime key and the relay's attestation of it. */
export interface MeshIdentity {
  runtimeKey: SigningKey
  relayPubkey: string
  attestation: string
}

function proofDigest(role: HelloRole, nonce: string, prover: string, verifier: string): Uint8Array {
  return sha256(new TextEncoder().encode(`apiary-mesh-hello-v1\n${role}\nnonce=${nonce}\nprover=${prover}\nverifier=${verifier}`))
}

/** `prover`'s signature over the peer's nonce, in `role`. */
export function proveRuntime(identity: MeshIdentity, role: HelloRole, peerNonce: string, peer: string): string {
  const digest = proofDigest(role, peerNonce, identity.runtimeKey.pubkey, peer)
  return bytesToHex(signBip340(bip340KeyOf(identity.runtimeKey.secretKey), digest))
}

export function toHello(identity: MeshIdentity, nonce: string, extra: { to?: string; proof?: string }): Hello {
  return {
    v: MESH_PROTOCOL_VERSION,
    runtime: identity.runtimeKey.pubkey,
    relay: identity.relayPubkey,
    attestation: identity.attestation,
    nonce,
    ...extra,
  }
}

/** A peer's Hello, accepted only with a valid attestation by `anchorRelayPubkey` and not from ourselves. */
export function parseHello(json: unknown, anchorRelayPubkey: string, self: string): Result<Hello> {
  const parsed = helloSchema.safeParse(json)
  if (!parsed.success) return refuse('malformed hello')
  const h = parsed.data
  if (h.runtime === self) return refuse('a node does not link to itself')
  const attested = checkAttestation(h.runtime, h.relay, h.attestation, anchorRelayPubkey)
  return attested.ok ? ok(h) : attested
}

/** Does `proof` show that `prover` holds its runtime key, answering our `nonce` in `role`? */
export function checkProof(proof: string | undefined, role: HelloRole, nonce: string, prover: string, verifier: string): Result<void> {
  if (proof === undefined) return refuse('hello without proof')
  return verifies(proof, proofDigest(role, nonce, prover, verifier), prover) ? OK_VOID : refuse('runtime proof does not verify')
}

export function parseHelloProof(json: unknown): Result<string> {
  const parsed = helloProofSchema.safeParse(json)
  return parsed.success ? ok(parsed.data.proof) : refuse('malformed hello proof')
}

function refuse(why: string): Result<never, Reason> {
  return err(reason('invalid', why))
}
