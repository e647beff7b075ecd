// The identifier shapes every layer checks: NIP-01 hex ids, keys and signatures, and Apiary's community ids.
// Spelled once so that the parser, the config schema, the key formatters and the mesh frames cannot drift
// apart. Patterns are exported for zod users (`z.string().regex(HEX64_PATTERN)`); everyone else uses the
// predicates. The .mjs worker files cannot import TypeScript and keep their own copies (each says so).

/** NIP-01: event ids and pubkeys are 32 bytes as lowercase hex; uppercase is not the same key to a relay. */
export const HEX64_PATTERN = /^[0-9a-f]{64}$/
/** NIP-01: a Schnorr signature, 64 bytes as lowercase hex. */
const HEX128_PATTERN = /^[0-9a-f]{128}$/
/**
 * A community id: lowercase letters, digits and dashes, at most 63, not starting with a dash. It is one DNS
 * label's length and charset, and it sits inside Redis key names (`apiary:{<id>}:…`), so no `:`, `{` or `}`.
 */
export const COMMUNITY_ID_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/

const HEX64_ANY_CASE = /^[0-9a-f]{64}$/i

// Each predicate narrows `unknown` to string; given a string it is a plain test, so that the branch where the
// test failed keeps its string (a type guard would narrow it to never).
export function isHex64(v: string): boolean
export function isHex64(v: unknown): v is string
export function isHex64(v: unknown): boolean {
  return typeof v === 'string' && HEX64_PATTERN.test(v)
}

export function isHex128(v: string): boolean
export function isHex128(v: unknown): v is string
export function isHex128(v: unknown): boolean {
  return typeof v === 'string' && HEX128_PATTERN.test(v)
}

/**
 * 64 hex digits in either case: for what a person types (a secret key pasted from another tool), which is
 * lowercased before use. Never for ids or pubkeys on the wire, where only lowercase is canonical.
 */
export function isHex64IgnoringCase(v: string): boolean {
  return HEX64_ANY_CASE.test(v)
}

export function isCommunityId(v: string): boolean
export function isCommunityId(v: unknown): v is string
export function isCommunityId(v: unknown): boolean {
  return typeof v === 'string' && COMMUNITY_ID_PATTERN.test(v)
}
