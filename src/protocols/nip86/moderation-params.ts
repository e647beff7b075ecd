// Params of the NIP-86 moderation methods (docs/nip86-methods.md): allow and ban lists, the community's
// relay info, kind rules, IP blocks, Apiary's timed ban and access policy. Untrusted input in, Result out.

import { isHex64 } from '../ids.js'
import { ok, type Result } from '../result.js'
import { invalid, maxBanReasonChars } from './methods.js'

export type AccessPolicyParam = 'public' | 'authenticated' | 'members'
const POLICIES: readonly string[] = ['public', 'authenticated', 'members']

/** `[key, reason?]`: the entry and why (undefined when left out or empty). */
export interface ListEntryParams {
  value: string
  reason: string | undefined
}

export interface TimeoutPubkeyParams {
  pubkey: string
  seconds: number
  reason: string | undefined
}

export interface CommunityPolicyParams {
  readPolicy?: AccessPolicyParam
  writePolicy?: AccessPolicyParam
  authRequired?: boolean
  publicMemberLists?: boolean
  membersInvite?: boolean
}

// Same bound as createcommunity's name: a title for a client's relay list, not a sentence.
export const maxRelayNameChars = 100
// NIP-11 sets no bound; a few paragraphs is what clients show, and the document is served on every GET /.
export const maxRelayDescriptionChars = 2_000
// The de-facto URL limit of browsers and CDNs; an icon URL longer than that is not one a client fetches.
export const maxIconUrlChars = 2_048
// A timeout is a cooling-off: under a second is no timeout; past 30 days it is a ban and should say so.
export const minTimeoutSeconds = 1
export const maxTimeoutSeconds = 30 * 86_400
// NIP-01: kinds are integers between 0 and 65535.
export const maxKind = 65_535
// The longest text form of an IPv6 address (eight groups with an IPv4 tail) is 45 characters, 49 with a
// `/128`; infra parses the address or range itself (infra/http/nip86/moderation.ts).
export const maxIpChars = 49

/** `["<32-byte-hex-event-id>", "<optional-reason>"]` (banevent, allowevent). */
export function parseEventIdParams(params: unknown[]): Result<ListEntryParams> {
  const [id, why] = params
  if (!isHex64(id)) return invalid('event id must be 64 lowercase hex characters')
  return withReason(id, why)
}

/** `["<ip-address-or-cidr>", "<optional-reason>"]` (blockip, unblockip): the text's size only, see maxIpChars. */
export function parseIpParams(params: unknown[]): Result<ListEntryParams> {
  const [ip, why] = params
  if (typeof ip !== 'string' || ip === '' || ip.length > maxIpChars) return invalid('ip must be an IPv4 or IPv6 address')
  return withReason(ip, why)
}

/** `["<pubkey>", <seconds>, "<optional-reason>"]`: banned from now until now + seconds. */
export function parseTimeoutPubkeyParams(params: unknown[]): Result<TimeoutPubkeyParams> {
  const [pubkey, seconds, why] = params
  if (!isHex64(pubkey)) return invalid('pubkey must be 64 lowercase hex characters')
  if (typeof seconds !== 'number' || !Number.isInteger(seconds) || seconds < minTimeoutSeconds || seconds > maxTimeoutSeconds)
    return invalid(`seconds must be a whole number from ${minTimeoutSeconds} to ${maxTimeoutSeconds}`)
  const entry = withReason(pubkey, why)
  return entry.ok ? ok({ pubkey, seconds, reason: entry.value.reason }) : entry
}

/** changerelayname `["<new-name>"]`: the community's NIP-11 name; an empty name is refused. */
export function parseRelayNameParam(params: unknown[]): Result<string> {
  const [name] = params
  if (typeof name !== 'string' || name.trim() === '' || name.length > maxRelayNameChars)
    return invalid(`name must be a non-empty string of at most ${maxRelayNameChars} characters`)
  return ok(name)
}

/** changerelaydescription `["<new-description>"]`; empty: the relay-wide description shows again. */
export function parseRelayDescriptionParam(params: unknown[]): Result<string> {
  const [text] = params
  if (typeof text !== 'string' || text.length > maxRelayDescriptionChars)
    return invalid(`description must be a string of at most ${maxRelayDescriptionChars} characters`)
  return ok(text)
}

/** changerelayicon `["<new-icon-url>"]`: an http(s) URL; empty: no icon. */
export function parseRelayIconParam(params: unknown[]): Result<string> {
  const [url] = params
  if (typeof url !== 'string' || url.length > maxIconUrlChars)
    return invalid(`icon must be an http(s) URL of at most ${maxIconUrlChars} characters`)
  if (url === '') return ok(url)
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return invalid('icon is not a URL')
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return invalid('icon must be an http or https URL')
  return ok(url)
}

/** allowkind, disallowkind `[<kind-number>]`. */
export function parseKindParam(params: unknown[]): Result<number> {
  const [kind] = params
  if (typeof kind !== 'number' || !Number.isInteger(kind) || kind < 0 || kind > maxKind)
    return invalid(`kind must be a whole number from 0 to ${maxKind}`)
  return ok(kind)
}

const POLICY_FIELDS = ['readPolicy', 'writePolicy', 'authRequired', 'publicMemberLists', 'membersInvite']
const FLAG_FIELDS = ['authRequired', 'publicMemberLists', 'membersInvite'] as const

/**
 * setcommunitypolicy `[{"readPolicy"?, "writePolicy"?, "authRequired"?, "publicMemberLists"?, "membersInvite"?}]`:
 * at least one, nothing else.
 */
export function parseCommunityPolicyParams(params: unknown[]): Result<CommunityPolicyParams> {
  const [patch] = params
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch))
    return invalid('params must be [{readPolicy?, writePolicy?, authRequired?, publicMemberLists?, membersInvite?}]')
  const fields = patch as Record<string, unknown>
  const keys = Object.keys(fields)
  const unknown = keys.find((k) => !POLICY_FIELDS.includes(k))
  if (unknown !== undefined) return invalid(`unknown policy field ${unknown.slice(0, 32)}`)
  if (keys.length === 0) return invalid(`set at least one of ${POLICY_FIELDS.join(', ')}`)
  const { readPolicy, writePolicy } = fields
  if (readPolicy !== undefined && !isPolicy(readPolicy)) return invalid('readPolicy must be public, authenticated or members')
  if (writePolicy !== undefined && !isPolicy(writePolicy)) return invalid('writePolicy must be public, authenticated or members')
  const flags: Pick<CommunityPolicyParams, (typeof FLAG_FIELDS)[number]> = {}
  for (const field of FLAG_FIELDS) {
    const value = fields[field]
    if (value === undefined) continue
    if (typeof value !== 'boolean') return invalid(`${field} must be true or false`)
    flags[field] = value
  }
  return ok({
    ...(readPolicy !== undefined && { readPolicy }),
    ...(writePolicy !== undefined && { writePolicy }),
    ...flags,
  })
}

const isPolicy = (v: unknown): v is AccessPolicyParam => typeof v === 'string' && POLICIES.includes(v)

function withReason(value: string, why: unknown): Result<ListEntryParams> {
  if (why !== undefined && why !== null && typeof why !== 'string') return invalid('reason must be a string')
  if (typeof why === 'string' && why.length > maxBanReasonChars) return invalid(`reason longer than ${maxBanReasonChars} characters`)
  return ok({ value, reason: typeof why === 'string' && why !== '' ? why : undefined })
}
