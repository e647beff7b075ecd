// Role domains (docs/agent-registry.md "Role domains"): the community's roster gives an agent a role, and the
// community's policy says which roles may address which — `p`-tag an agent of another role, or post in a
// channel restricted to some roles. An event across domains that the policy does not allow is refused with
// `restricted:`. Pure: the roster and the policy come in as arguments.
import { isHex64 } from './ids.js'
import type { NostrEvent } from './nip01/event.js'
import { isChannelId } from './nip29.js'
import { type Reason, reason } from './reasons.js'
import { err, ok, type Result } from './result.js'

/** Role names are short lowercase words: they are compared as written and shown in refusals. */
export const ROLE_PATTERN = /^[a-z0-9][a-z0-9-]{0,31}$/
// A policy is a handful of rules written by hand; hundreds would be a mistake (and cost per event).
export const MAX_ROLE_RULES = 64
export const MAX_ROLES_PER_RULE = 64

/** Agents of role `from` may address agents of the roles in `to` (and always their own role). */
export interface RoleRule {
  from: string
  to: string[]
}

/** Only agents of these roles may post in `channel` (people, who have no role, are not affected). */
export interface ChannelRoles {
  channel: string
  roles: string[]
}

export interface RolePolicy {
  rules: readonly RoleRule[]
  channels: readonly ChannelRoles[]
}

/**
 * The policy's verdict on `event`. `roleOf` is the roster: the role of a roster agent (null: on the roster
 * without one), undefined for anyone else (people, admins), who are neither restricted nor protected.
 * `owner`: the key that attested the author at AUTH (NIP-OA), if any. An author off the roster writes with
 * its owner's place in the domains: a key a roster agent attested is that agent (else an agent could leave
 * its role by attesting a fresh key), a key a person attested is that person's (outside the domains).
 * - addressing: once the community has any rule, an agent may `p`-tag an agent of another role only when a
 *   rule for its own role lists that role;
 * - channels: in a channel with a role list, an agent (on the roster) may post only with a listed role.
 */
export function checkRoleDomains(
  event: Pick<NostrEvent, 'pubkey' | 'tags'>,
  policy: RolePolicy,
  roleOf: (pubkey: string) => string | null | undefined,
  owner?: string,
): Reason | null {
  const author = authorRoleOf(event.pubkey, roleOf, owner)
  if (author === undefined) return null
  const channel = event.tags.find((t) => t[0] === 'h')?.[1]
  if (channel !== undefined) {
    const restricted = policy.channels.find((c) => c.channel === channel)
    if (restricted && (author === null || !restricted.roles.includes(author)))
      return reason('restricted', `channel ${channel} is open to agents of roles ${restricted.roles.join(', ')} only`)
  }
  if (author === null || policy.rules.length === 0) return null
  const allowed = policy.rules.find((r) => r.from === author)?.to ?? []
  for (const t of event.tags) {
    if (t[0] !== 'p' || t[1] === undefined) continue
    const target = roleOf(t[1])
    if (reaches(author, target, allowed)) continue
    return reason('restricted', `agents of role ${author} may not address agents of role ${target}`)
  }
  return null
}

/** An agent of role `author` may address one of role `target` (people and agents without a role: always). */
const reaches = (author: string, target: string | null | undefined, allowed: readonly string[]): boolean =>
  target === undefined || target === null || target === author || allowed.includes(target)

/**
 * Whether `to` may be addressed on behalf of `from` (a job of `from` handed to agent `to`): the addressing rule
 * of checkRoleDomains, both judged by the roster alone.
 */
export function mayAddress(
  rules: readonly RoleRule[],
  roleOf: (pubkey: string) => string | null | undefined,
  from: string,
  to: string,
): boolean {
  if (rules.length === 0) return true
  const author = roleOf(from)
  if (author === undefined || author === null) return true
  return reaches(author, roleOf(to), rules.find((r) => r.from === author)?.to ?? [])
}

/** The author's own roster entry first; off the roster, its owner's (null and undefined as for roleOf). */
export function authorRoleOf(
  pubkey: string,
  roleOf: (pubkey: string) => string | null | undefined,
  owner?: string,
): string | null | undefined {
  const own = roleOf(pubkey)
  return own !== undefined || owner === undefined ? own : roleOf(owner)
}

const isRoleList = (v: unknown): v is string[] =>
  Array.isArray(v) && v.length <= MAX_ROLES_PER_RULE && v.every((r) => typeof r === 'string' && ROLE_PATTERN.test(r))
const invalid = (text: string): Result<never> => err(reason('invalid', text))

/** `setagentrole` params: `["<pubkey>", "<role>"]`; `""` takes the role away. */
export function parseSetAgentRoleParams(params: unknown[]): Result<{ pubkey: string; role: string | null }> {
  const [pubkey, role] = params
  if (!isHex64(pubkey)) return invalid('pubkey must be 64 lowercase hex characters')
  if (role === '') return ok({ pubkey, role: null })
  if (typeof role !== 'string' || !ROLE_PATTERN.test(role))
    return invalid('role must be lowercase letters, digits and dashes (at most 32), or "" for none')
  return ok({ pubkey, role })
}

/** `setroledomain` params: `["<from role>", ["<to role>", ...]]`; `[]` removes the rule for that role. */
export function parseSetRoleDomainParams(params: unknown[]): Result<RoleRule> {
  const [from, to] = params
  if (typeof from !== 'string' || !ROLE_PATTERN.test(from)) return invalid('the first param must be a role')
  if (!isRoleList(to)) return invalid(`the second param must be a list of at most ${MAX_ROLES_PER_RULE} roles`)
  return ok({ from, to: [...new Set(to)] })
}

/** `setchannelroles` params: `["<channel id>", ["<role>", ...]]`; `[]` lifts the restriction. */
export function parseSetChannelRolesParams(params: unknown[]): Result<ChannelRoles> {
  const [channel, roles] = params
  if (!isChannelId(channel)) return invalid('the first param must be a channel id')
  if (!isRoleList(roles)) return invalid(`the second param must be a list of at most ${MAX_ROLES_PER_RULE} roles`)
  return ok({ channel, roles: [...new Set(roles)] })
}

/** The policy with `rule` in place of its role's (a rule with no roles removes it). */
export function withRule(rules: readonly RoleRule[], rule: RoleRule): Result<RoleRule[]> {
  const rest = rules.filter((r) => r.from !== rule.from)
  const next = rule.to.length === 0 ? rest : [...rest, rule]
  return next.length > MAX_ROLE_RULES ? invalid(`a community has at most ${MAX_ROLE_RULES} role rules`) : ok(next)
}

/** The channel list with `entry` in place of its channel's (no roles: unrestricted). */
export function withChannelRoles(channels: readonly ChannelRoles[], entry: ChannelRoles): Result<ChannelRoles[]> {
  const rest = channels.filter((c) => c.channel !== entry.channel)
  const next = entry.roles.length === 0 ? rest : [...rest, entry]
  return next.length > MAX_ROLE_RULES ? invalid(`a community restricts at most ${MAX_ROLE_RULES} channels by role`) : ok(next)
}
