// Params of Apiary's own NIP-86 methods (docs/nip86-methods.md): agent tiers in the addressed community, and
// the operator's community lifecycle. Untrusted input in, Result out; never throws.
import { normalizeHost } from '../host.js'
import { isCommunityId, isHex64 } from '../ids.js'
import { DEFAULT_INVITE_SECONDS } from '../nip43.js'
import { ok, type Result } from '../result.js'
import { invalid } from './methods.js'

export type AgentTierParam = 'standard' | 'elevated' | 'platform'
const TIERS: readonly string[] = ['standard', 'elevated', 'platform', 'none']

// A community answers on a handful of names; a long list is a mistake, not a deployment.
export const maxHostsPerCommunity = 16
// Admins manage one community; hundreds would be a moderation team better served by NIP-29 roles.
export const maxAdminsPerCommunity = 100
const MAX_NAME_CHARS = 100

export interface SetAgentTierParams {
  pubkey: string
  /** `none` takes the pubkey off the roster: it is a human principal again */
  tier: AgentTierParam | 'none'
}

export interface CreateCommunityParams {
  id: string
  hosts: string[]
  name: string | undefined
  admins: string[]
}

/** `setagenttier` params: `["<pubkey>", "standard" | "elevated" | "platform" | "none"]`. */
export function parseSetAgentTierParams(params: unknown[]): Result<SetAgentTierParams> {
  const [pubkey, tier] = params
  if (!isHex64(pubkey)) return invalid('pubkey must be 64 lowercase hex characters')
  if (typeof tier !== 'string' || !TIERS.includes(tier)) return invalid('tier must be standard, elevated, platform or none')
  return ok({ pubkey, tier: tier as SetAgentTierParams['tier'] })
}

/** `createcommunity` params: `["<id>", ["<host>", ...], "<name>"?, ["<admin pubkey>", ...]?]`. */
export function parseCreateCommunityParams(params: unknown[]): Result<CreateCommunityParams> {
  const [id, hosts, name, admins] = params
  if (!isCommunityId(id)) return invalid('id must be lowercase letters, digits and dashes (at most 63)')
  if (!Array.isArray(hosts) || hosts.length === 0 || hosts.length > maxHostsPerCommunity)
    return invalid(`hosts must be a list of 1 to ${maxHostsPerCommunity} host names`)
  const normalized: string[] = []
  for (const h of hosts) {
    // stored as the operator would type it in the config; the port-less name must parse as a Host header
    const n = typeof h === 'string' ? normalizeHost(h, 'http') : undefined
    if (n === undefined) return invalid(`host ${String(h).slice(0, 64)} is not a host name`)
    normalized.push(n)
  }
  if (name !== undefined && name !== null && (typeof name !== 'string' || name.length > MAX_NAME_CHARS))
    return invalid(`name must be a string of at most ${MAX_NAME_CHARS} characters`)
  if (admins !== undefined && !isPubkeyList(admins, maxAdminsPerCommunity))
    return invalid(`admins must be a list of at most ${maxAdminsPerCommunity} hex pubkeys`)
  return ok({ id, hosts: [...new Set(normalized)], name: typeof name === 'string' && name !== '' ? name : undefined, admins: admins ?? [] })
}

// An invite is passed on by hand within days; past a month it is a standing door, which is what a `public`
// write policy is for. A minute is the least time to paste it.
export const minInviteSeconds = 60
export const maxInviteSeconds = 30 * 86_400
// Enough for a meetup's room; past it, a code is a public link and the community's policy should say so.
export const maxInviteUses = 10_000

export interface CreateInviteParams {
  seconds: number
  uses: number
}

/** `createinvite` params: `[<seconds>?, <uses>?]`, a day and one use unless given. */
export function parseCreateInviteParams(params: unknown[]): Result<CreateInviteParams> {
  const [seconds = DEFAULT_INVITE_SECONDS, uses = 1] = params
  if (!isWholeIn(seconds, minInviteSeconds, maxInviteSeconds))
    return invalid(`seconds must be a whole number from ${minInviteSeconds} to ${maxInviteSeconds}`)
  if (!isWholeIn(uses, 1, maxInviteUses)) return invalid(`uses must be a whole number from 1 to ${maxInviteUses}`)
  return ok({ seconds, uses })
}

const isWholeIn = (v: unknown, min: number, max: number): v is number => Number.isInteger(v) && (v as number) >= min && (v as number) <= max

/** `archivecommunity` params: `["<id>"]`. */
export function parseCommunityIdParam(params: unknown[]): Result<string> {
  const [id] = params
  if (!isCommunityId(id)) return invalid('id must be a community id')
  return ok(id)
}

const isPubkeyList = (v: unknown, max: number): v is string[] => Array.isArray(v) && v.length <= max && v.every(isHex64)
