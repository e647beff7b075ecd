// A node's readiness record: what a peer needs to dial it and decide whether to trust it. Stored
// in Redis at `apiary:mesh:ready:<runtime>` (infra/mesh/readiness-registry.ts), refreshed every 15 s and
// expiring after 45 s — three refreshes, so one or two lost writes never make a live node vanish.
//
// Two signatures: the relay key attests the runtime (attestation.ts), and the runtime key signs the record's
// fields, so everything a reader acts on — endpoint, draining, expiry — comes from that runtime and not from
// whoever can write to Redis. Readers check signature, anchor and expiry, in that order of cost, cheapest
// first; a record that fails any of them is skipped (and counted by the caller), never half-believed.
import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex } from '@noble/hashes/utils.js'
import { z } from 'zod'
import { bip340KeyOf, signBip340 } from '../bip340.js'
import type { SigningKey } from '../nip01/sign.js'
import { type Reason, reason } from '../reasons.js'
import { err, ok, type Result } from '../result.js'
import { checkAttestation, verifies } from './attestation.js'

/** Refresh interval of a record, and its lifetime: three refreshes (a reader drops it after the third miss). */
export const READINESS_REFRESH_MS = 15_000
export const READINESS_TTL_MS = 3 * READINESS_REFRESH_MS
/** A record issued further ahead than this is refused: clock skew between nodes beyond it is a fault. */
export const READINESS_MAX_SKEW_MS = 30_000

const hex = (n: number) => z.string().regex(new RegExp(`^[0-9a-f]{${n}}$`))

const recordSchema = z.strictObject({
  v: z.literal(1),
  runtime: hex(64),
  relay: hex(64),
  attestation: hex(128),
  endpoint: z
    .string()
    .regex(/^wss?:\/\/[^\s/]+(\/\S*)?$/)
    .max(512),
  protocol: z.number().int().min(1).max(255),
  capabilities: z.array(z.string().regex(/^[a-z0-9-]{1,32}$/)).max(32),
  /** open client connections on the node: a routing hint, never a decision */
  load: z.number().int().min(0),
  draining: z.boolean(),
  issuedAtMs: z.number().int().min(0),
  expiresAtMs: z.number().int().min(0),
  sig: hex(128),
})

export type ReadinessRecord = z.infer<typeof recordSchema>
export type ReadinessFields = Pick<ReadinessRecord, 'endpoint' | 'protocol' | 'capabilities' | 'load' | 'draining'>

/** What the runtime key signs: every field but `sig`, in a fixed order. */
function recordDigest(r: Omit<ReadinessRecord, 'sig'>): Uint8Array {
  const fields = [
    'apiary-mesh-record-v1',
    r.runtime,
    r.relay,
    r.attestation,
    r.endpoint,
    r.protocol,
    r.capabilities,
    r.load,
    r.draining,
    r.issuedAtMs,
    r.expiresAtMs,
  ]
  return sha256(new TextEncoder().encode(JSON.stringify(fields)))
}

/** A record signed by `runtimeKey`, carrying the relay's `attestation` of it, valid for READINESS_TTL_MS from `nowMs` (wall clock). */
export function buildReadinessRecord(
  runtimeKey: SigningKey,
  relay: string,
  attestation: string,
  fields: ReadinessFields,
  nowMs: number,
): ReadinessRecord {
  const unsigned = {
    v: 1 as const,
    runtime: runtimeKey.pubkey,
    relay,
    attestation,
    ...fields,
    issuedAtMs: Math.floor(nowMs),
    expiresAtMs: Math.floor(nowMs) + READINESS_TTL_MS,
  }
  return { ...unsigned, sig: bytesToHex(signBip340(bip340KeyOf(runtimeKey.secretKey), recordDigest(unsigned))) }
}

/** A record read from Redis, accepted only if well-formed, current at `nowMs`, attested by the anchor and signed by its runtime. */
export function parseReadinessRecord(text: string, anchorRelayPubkey: string, nowMs: number): Result<ReadinessRecord> {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return refuse('not JSON')
  }
  const parsed = recordSchema.safeParse(json)
  if (!parsed.success) return refuse('malformed record')
  const r = parsed.data
  if (r.expiresAtMs <= nowMs) return refuse('expired')
  if (r.issuedAtMs > nowMs + READINESS_MAX_SKEW_MS || r.expiresAtMs - r.issuedAtMs > READINESS_TTL_MS)
    return refuse('issued in the future or for too long')
  const attested = checkAttestation(r.runtime, r.relay, r.attestation, anchorRelayPubkey)
  if (!attested.ok) return attested
  const { sig, ...unsigned } = r
  return verifies(sig, recordDigest(unsigned), r.runtime) ? ok(r) : refuse('record signature does not verify')
}

function refuse(why: string): Result<never, Reason> {
  return err(reason('invalid', why))
}
