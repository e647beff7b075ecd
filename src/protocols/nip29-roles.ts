import { reason } from './reasons.js'
import { err, ok, type Result } from './result.js'

/*
 * NIP-29 roles in a channel. A 9000 names a member's roles ("the relay may also accept other role names ...
 * and just not do anything with them"); two of them grant something here, and what a member's roles let it do
 * is decided once, by standingOf, for the write policy (nip29.ts authorize) and the relay-signed lists alike.
 */

export const ROLE_ADMIN = 'admin'
export const ROLE_MODERATOR = 'moderator'

/** What a member's roles let it do in its channel: its highest privileged role, else `member`. */
export type ChannelRole = typeof ROLE_ADMIN | typeof ROLE_MODERATOR | 'member'

/** A member's role names as its last 9000 gave them, in that order; empty for a plain member. */
export type MemberRoles = readonly string[]

/**
 * The roles that grant something, as kind 39003 advertises them. A moderator acts on plain members only,
 * so that no moderator can depose the admins who named it, nor another moderator.
 */
export const SUPPORTED_ROLES: readonly { name: ChannelRole; description: string }[] = [
  {
    name: ROLE_ADMIN,
    description: 'every moderation action: members and their roles, metadata, deleting events and the group, invite codes',
  },
  {
    name: ROLE_MODERATOR,
    description: 'deletes events (9005) and removes members (9001), of members who hold no admin or moderator role',
  },
]

// A member's roles ride in 39001/39002 tags and in every membership row: a handful of short labels.
export const MAX_MEMBER_ROLES = 8
export const MAX_ROLE_NAME_CHARS = 32
// Printable and without blanks: a role name is shown as a label and compared as written. PostgreSQL text
// holds no NUL and re-encodes lone surrogates, so control, format and surrogate characters never reach it.
const ROLE_NAME = new RegExp(`^[^\\p{C}\\p{Z}]{1,${MAX_ROLE_NAME_CHARS}}$`, 'u')

/**
 * The role names after the pubkey of a 9000's `p` tag, each once, in order. An empty value is skipped: it is
 * where NIP-01 puts a relay hint, and clients send it empty.
 */
export function parseMemberRoles(values: readonly unknown[]): Result<string[]> {
  const roles: string[] = []
  for (const v of values) {
    if (v === '') continue
    if (typeof v !== 'string' || !ROLE_NAME.test(v))
      return err(reason('invalid', `a role name is 1 to ${MAX_ROLE_NAME_CHARS} characters, without blanks or control characters`))
    if (!roles.includes(v)) roles.push(v)
  }
  if (roles.length > MAX_MEMBER_ROLES) return err(reason('invalid', `a member holds at most ${MAX_MEMBER_ROLES} roles`))
  return ok(roles)
}

export function standingOf(roles: MemberRoles): ChannelRole {
  if (roles.includes(ROLE_ADMIN)) return ROLE_ADMIN
  if (roles.includes(ROLE_MODERATOR)) return ROLE_MODERATOR
  return 'member'
}

/** Holds a role that grants something: listed in 39001. */
export const isPrivileged = (roles: MemberRoles) => standingOf(roles) !== 'member'

const RANK: Record<ChannelRole, number> = { admin: 0, moderator: 1, member: 2 }

/** NIP-29 lists admins first: admins, then moderators, then everyone else, each by pubkey. */
export function compareMembers(a: { pubkey: string; roles: MemberRoles }, b: { pubkey: string; roles: MemberRoles }): number {
  const rank = RANK[standingOf(a.roles)] - RANK[standingOf(b.roles)]
  if (rank !== 0) return rank
  return a.pubkey < b.pubkey ? -1 : a.pubkey > b.pubkey ? 1 : 0
}
