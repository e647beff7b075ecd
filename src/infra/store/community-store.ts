/** A community as the node knows it: where it answers, who is an agent there, who manages it (architecture §1). */
import type { ChannelRoles, RoleRule } from '../../protocols/role-domains.js'

export type AgentTier = 'standard' | 'elevated' | 'platform'

/** Who may read (REQ/COUNT/live) or write (EVENT) in a community. `members`: admins, agents and allowed pubkeys. */
export type AccessPolicy = 'public' | 'authenticated' | 'members'

export interface CommunitySettings {
  readPolicy: AccessPolicy
  writePolicy: AccessPolicy
  /** NIP-42 AUTH before any REQ/COUNT/EVENT (the relay-wide `authRequired` forces it everywhere) */
  authRequired: boolean
  /** NIP-11 `description` and `icon` (`name` is the record's) */
  description: string
  icon: string
  /**
   * Role domains (NIP-86 setroledomain / setchannelroles): which agent roles may address which, and the
   * channels open to some roles only. Lists, so a settings patch replaces them whole on both backends.
   */
  roleRules: RoleRule[]
  channelRoles: ChannelRoles[]
  /**
   * member lists readable by anyone the read policy lets read, not by members only: a private channel's admin
   * and member lists (39001/39002) and the community's NIP-43 member list and changes (13534, 8000, 8001)
   */
  publicMemberLists: boolean
  /** NIP-43: members, not only admins, may ask for an invite code (kind 28935) */
  membersInvite: boolean
}

export const DEFAULT_SETTINGS: CommunitySettings = {
  readPolicy: 'public',
  writePolicy: 'public',
  authRequired: false,
  description: '',
  icon: '',
  roleRules: [],
  channelRoles: [],
  publicMemberLists: false,
  membersInvite: false,
}

/**
 * Settings as read back: the defaults fill what a row lacks (rows from before a setting existed), and only
 * known keys are kept, so a row written by another build never leaks an unknown field into the record.
 */
export function toSettings(stored: Partial<CommunitySettings>): CommunitySettings {
  return { ...DEFAULT_SETTINGS, ...settingsPatch(stored) }
}

/** The known settings among `patch` that carry a value: what a store writes (JSON drops `undefined` anyway). */
export function settingsPatch(patch: Partial<CommunitySettings>): Partial<CommunitySettings> {
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(DEFAULT_SETTINGS) as (keyof CommunitySettings)[]) {
    if (patch[key] !== undefined) out[key] = patch[key]
  }
  return out as Partial<CommunitySettings>
}

/** NIP-86 allowkind/disallowkind: `allowed` empty means every kind not `disallowed`. */
export interface KindRules {
  allowed: number[]
  disallowed: number[]
}

/** Kind rule rows of any communities → each community's rules, kinds ascending. */
export function toKindRules(rows: readonly { community: string; kind: number; rule: string }[]): Map<string, KindRules> {
  const out = new Map<string, KindRules>()
  for (const r of rows) {
    const rules = out.get(r.community) ?? { allowed: [], disallowed: [] }
    out.set(r.community, rules)
    if (r.rule === 'allow') rules.allowed.push(r.kind)
    else rules.disallowed.push(r.kind)
  }
  for (const rules of out.values()) {
    rules.allowed.sort((a, b) => a - b)
    rules.disallowed.sort((a, b) => a - b)
  }
  return out
}

export interface CommunityRecord {
  id: string
  name: string
  hosts: string[]
  /** `role`: the agent's role domain (docs/agent-registry.md), absent for none */
  agents: { pubkey: string; tier: AgentTier; role?: string }[]
  /** hex pubkeys allowed to call this community's NIP-86 methods (operators always are) */
  admins: string[]
  settings: CommunitySettings
  kinds: KindRules
}

/** What `put` takes: `admins` and `settings` may be left out (none, and the defaults); `kinds` is not written by put. */
export type CommunityInput = Omit<CommunityRecord, 'admins' | 'settings' | 'kinds'> & {
  admins?: string[]
  settings?: Partial<CommunitySettings>
}

/** One row of a NIP-86 list (allowed pubkeys, banned events, blocked IPs): the key and why. */
export interface ListedEntry {
  value: string
  reason: string
}

/** A pubkey refused in one community, checked at AUTH and at every write (rows shared by every node). */
export interface BanRecord {
  pubkey: string
  reason: string
  /** unix seconds the ban ends at (exclusive); absent for a ban without end */
  untilSeconds?: number
}

/** A ban row as stored (`until_seconds` NULL for a ban without end) → BanRecord. */
export const toBanRecord = (pubkey: string, reason: string, untilSeconds: number | null): BanRecord =>
  untilSeconds === null ? { pubkey, reason } : { pubkey, reason, untilSeconds }

export interface CommunityStore {
  /** the active communities (archived ones keep their rows, hosts and events, but are not listed) */
  list(): Promise<CommunityRecord[]>
  /** stop serving a community on every node (each node's revalidation drops it); false when unknown */
  archive(id: string, nowSeconds: number): Promise<boolean>
  /**
   * insert or replace by id; a host already bound to another community is refused. `create`: refuse an id
   * that exists, archived ones included (an archived id keeps its events and hosts; it is never reused).
   * `settings` are merged over the stored ones (over the defaults for a new id): a put that leaves them out
   * keeps what an admin changed. Kind rules and the NIP-86 lists are never touched by put.
   */
  put(record: CommunityInput, opts?: { create?: boolean }): Promise<{ ok: true } | { ok: false; error: string }>
  /** bans, or re-bans with a new reason and end; `untilSeconds` absent bans until unbanned */
  banPubkey(community: string, pubkey: string, reason: string, untilSeconds?: number): Promise<void>
  /**
   * The bans in force at `nowSeconds` among `pubkeys`, by pubkey (the others are not banned); a timed ban
   * whose end is <= now is no longer a ban. One query for many pubkeys: the per-write check (ban-lookup.ts)
   * asks for every pubkey that wrote during one round trip at once.
   */
  bannedAmong(community: string, pubkeys: readonly string[], nowSeconds: number): Promise<Map<string, { reason: string }>>
  unbanPubkey(community: string, pubkey: string): Promise<void>
  /** bans in force at `nowSeconds`, by pubkey */
  listBans(community: string, nowSeconds: number): Promise<BanRecord[]>
  /** merges into the stored settings (and renames when `name` is given), atomically; false when unknown */
  updateSettings(id: string, patch: Partial<CommunitySettings> & { name?: string }): Promise<boolean>
  /** one rule per (community, kind): 'allow' replaces a 'disallow' and the other way round */
  setKindRule(community: string, kind: number, rule: 'allow' | 'disallow'): Promise<void>
  /** NIP-86 allowpubkey: the community's members list (for the `members` policies) */
  allowPubkey(community: string, pubkey: string, reason: string): Promise<void>
  /** false when it was not listed */
  disallowPubkey(community: string, pubkey: string): Promise<boolean>
  /** by pubkey; at most `limit` when given (a 13534 names a bounded number of members) */
  listAllowedPubkeys(community: string, limit?: number): Promise<ListedEntry[]>
  /** those among `pubkeys` on the allowed list */
  allowedAmong(community: string, pubkeys: readonly string[]): Promise<Set<string>>
  /** NIP-86 banevent: remembered so a resubmission is refused (the caller deletes the stored event) */
  banEvent(community: string, id: string, reason: string): Promise<void>
  /** false when it was not banned */
  allowEvent(community: string, id: string): Promise<boolean>
  listBannedEvents(community: string): Promise<ListedEntry[]>
  isEventBanned(community: string, id: string): Promise<boolean>
  blockIp(community: string, ip: string, reason: string): Promise<void>
  /** false when it was not blocked */
  unblockIp(community: string, ip: string): Promise<boolean>
  listBlockedIps(community: string): Promise<ListedEntry[]>
  close(): Promise<void>
}

/** The embedded default (docs/architecture.md §11): one community answering on the loopback names. */
export const DEFAULT_COMMUNITY: CommunityInput = { id: 'default', name: 'default', hosts: ['localhost', '127.0.0.1', '[::1]'], agents: [] }

/** A fresh data directory starts with the default community, whichever command touches it first. */
export async function seedDefaultCommunity(store: CommunityStore): Promise<void> {
  if ((await store.list()).length === 0) await store.put(DEFAULT_COMMUNITY)
}
