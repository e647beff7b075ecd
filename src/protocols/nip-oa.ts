import { schnorr } from '@noble/curves/secp256k1.js'
import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex, hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js'
import { bip340KeyOf, signBip340 } from './bip340.js'
import { isHex64, isHex128 } from './ids.js'
import { MAX_KIND } from './nip01/kinds.js'
import { reason } from './reasons.js'
import { err, ok, type Result } from './result.js'

// NIP-OA (Owner Attestation, block/buzz docs/nips/NIP-OA.md) as NIP-AA uses it at NIP-42 AUTH: an owner key
// signs that an agent key is theirs, and the agent carries the tag. See docs/agent-attestation.md.

/** NIP-OA: `["auth", <owner-pubkey-hex>, <conditions>, <sig-hex>]`, exactly four elements. */
export const AUTH_TAG = 'auth'
/** NIP-OA: "The domain separator string is exactly `nostr:agent-auth:`". */
export const ATTESTATION_DOMAIN = 'nostr:agent-auth:'

// Ours, not NIP-OA's (it sets none): real conditions are a kind and a window, under 60 chars. The cap bounds
// the clause loop per AUTH; the string is signed verbatim, so it cannot be truncated, only refused.
export const maxConditionsChars = 512

// NIP-OA: kind= values in 0..65535 (MAX_KIND), created_at values in 0..4294967295.
const MAX_TIMESTAMP = 4_294_967_295

// NIP-OA: "canonical base-10 with no leading zeroes except `0`"
const DECIMAL = /^(0|[1-9][0-9]*)$/
// NIP-OA: ASCII, and "Whitespace is not permitted anywhere in <conditions>"
const VISIBLE_ASCII = /^[\x21-\x7e]*$/

export type Clause = { type: 'kind'; value: number } | { type: 'created_at<'; value: number } | { type: 'created_at>'; value: number }

/** A well-formed `auth` tag. The signature is not checked yet: that is checkOwnerAttestation's job. */
export interface OwnerAttestation {
  owner: string
  /** verbatim from the tag: NIP-OA forbids reordering or normalizing before hashing */
  conditions: string
  clauses: readonly Clause[]
  sig: string
}

export interface AttestationContext {
  /** the AUTH event's pubkey: NIP-OA signs `event.pubkey`, never the owner or another signer */
  agentPubkey: string
  /** NIP-AA Step 4: the AUTH event's created_at, which checkAuthEvent has held within the window */
  nowSeconds: number
  /** check `kind=` clauses against this kind too; NIP-AA leaves them out at admission (§Kind Conditions) */
  kind?: number
}

/**
 * The attestation an event's tags carry: undefined when there is no `auth` tag, `invalid:` when there is
 * more than one (NIP-OA: "MUST treat the event as having no valid auth tag") or it is malformed.
 */
export function parseOwnerAttestation(tags: string[][]): Result<OwnerAttestation | undefined> {
  const found = tags.filter((t) => t[0] === AUTH_TAG)
  if (found.length === 0) return ok(undefined)
  if (found.length > 1) return invalid('more than one auth tag')
  const tag = found[0]!
  if (tag.length !== 4) return invalid('auth tag must have exactly 4 elements')
  const [, owner, conditions, sig] = tag as [string, string, string, string]
  if (!isHex64(owner)) return invalid('auth tag owner must be 64 lowercase hex characters')
  if (!isHex128(sig)) return invalid('auth tag signature must be 128 lowercase hex characters')
  const clauses = parseConditions(conditions)
  if (!clauses.ok) return clauses
  return ok({ owner, conditions, clauses: clauses.value, sig })
}

/**
 * NIP-OA conditions: empty, or clauses `kind=<n>`, `created_at<<t>`, `created_at><t>` joined by `&`.
 * Exported so a signer (the CLI) can refuse a string before signing it.
 */
export function parseConditions(conditions: string): Result<Clause[]> {
  if (typeof conditions !== 'string') return invalid('auth tag conditions must be a string')
  if (conditions.length > maxConditionsChars) return invalid(`auth tag conditions longer than ${maxConditionsChars} characters`)
  if (conditions === '') return ok([])
  if (!VISIBLE_ASCII.test(conditions)) return invalid('auth tag conditions must be ASCII without whitespace')
  const clauses: Clause[] = []
  for (const text of conditions.split('&')) {
    const clause = parseClause(text)
    if (!clause.ok) return clause
    clauses.push(clause.value)
  }
  return ok(clauses)
}

function parseClause(text: string): Result<Clause> {
  if (text === '') return invalid('auth tag conditions contain an empty clause')
  for (const [prefix, type, max] of CLAUSE_FORMS) {
    if (!text.startsWith(prefix)) continue
    const digits = text.slice(prefix.length)
    if (!DECIMAL.test(digits)) return invalid(`auth tag clause ${prefix} needs a canonical decimal`)
    const value = Number(digits)
    if (value > max) return invalid(`auth tag clause ${prefix} is out of range`)
    return ok({ type, value })
  }
  return invalid('auth tag conditions contain an unknown clause')
}

const CLAUSE_FORMS: readonly (readonly [string, Clause['type'], number])[] = [
  ['kind=', 'kind', MAX_KIND],
  ['created_at<', 'created_at<', MAX_TIMESTAMP],
  ['created_at>', 'created_at>', MAX_TIMESTAMP],
]

/** NIP-OA: the signed message is SHA256 of the UTF-8 bytes `nostr:agent-auth:` ‖ agent ‖ `:` ‖ conditions. */
export const attestationMessage = (agentPubkey: string, conditions: string): Uint8Array =>
  sha256(utf8ToBytes(ATTESTATION_DOMAIN + agentPubkey + ':' + conditions))

/**
 * NIP-AA Step 4: the owner is not the agent, the owner's BIP-340 signature covers this agent and these
 * conditions, and the time clauses hold at `nowSeconds` (and the kind clauses for `kind`, when given).
 * A broken credential is `invalid:`; a sound one that does not cover this moment or kind is `restricted:`.
 */
export function checkOwnerAttestation(att: OwnerAttestation, at: AttestationContext): Result<{ owner: string }> {
  if (att.owner === at.agentPubkey) return invalid('owner attestation is signed by the agent itself')
  if (!verifySignature(att, at.agentPubkey)) return invalid('bad owner attestation signature')
  for (const c of att.clauses) {
    if (c.type === 'created_at<' && !(at.nowSeconds < c.value)) return restricted('owner attestation expired')
    if (c.type === 'created_at>' && !(at.nowSeconds > c.value)) return restricted('owner attestation not yet valid')
  }
  if (at.kind !== undefined && !conditionsAllowKind(att, at.kind)) {
    return restricted(`owner attestation does not allow kind ${at.kind}`)
  }
  return ok({ owner: att.owner })
}

/**
 * Whether the agent may publish `kind` under this attestation. NIP-OA clauses are conjunctive, so
 * `kind=1&kind=7` allows nothing; no `kind=` clause allows every kind. NIP-AA: a relay that enforces these
 * keeps the credential for the session and checks every event the agent writes.
 */
export const conditionsAllowKind = (att: Pick<OwnerAttestation, 'clauses'>, kind: number): boolean =>
  att.clauses.every((c) => c.type !== 'kind' || c.value === kind)

/**
 * The `auth` tag by which `ownerSecretKey` attests `agentPubkey`. It signs `conditions` verbatim: check them
 * with parseConditions first, or the tag is one that parseOwnerAttestation refuses. Throws on a bad key
 * (our caller's bug, not client input). Aux randomness is fresh for each signature, as BIP-340 recommends.
 */
export function signOwnerAttestation(ownerSecretKey: Uint8Array, agentPubkey: string, conditions: string): string[] {
  const key = bip340KeyOf(ownerSecretKey)
  const owner = bytesToHex(key.publicKey)
  const sig = bytesToHex(signBip340(key, attestationMessage(agentPubkey, conditions)))
  return [AUTH_TAG, owner, conditions, sig]
}

/** schnorr.verify throws on a point off the curve; NIP-OA counts an invalid owner key as a failed check. */
function verifySignature(att: OwnerAttestation, agentPubkey: string): boolean {
  try {
    return schnorr.verify(hexToBytes(att.sig), attestationMessage(agentPubkey, att.conditions), hexToBytes(att.owner))
  } catch {
    return false
  }
}

const invalid = (text: string): Result<never> => err(reason('invalid', text))
const restricted = (text: string): Result<never> => err(reason('restricted', text))
