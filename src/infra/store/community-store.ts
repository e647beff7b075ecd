/** A community as the node knows it: where it answers, who is an agent there, who manages it (DESIGN §1). */
export type AgentTier = 'standard' | 'elevated' | 'platform'

export interface CommunityRecord {
  id: string
  name: string
  hosts: string[]
  agents: { pubkey: string; tier: AgentTier }[]
  /** hex pubkeys allowed to call this community's NIP-86 methods (operators always are) */
  admins: string[]
}

/** What `put` takes: a record whose `admins` may be left out (it means none). */
export type CommunityInput = Omit<CommunityRecord, 'admins'> & { admins?: string[] }

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
   */
  put(record: CommunityInput, opts?: { create?: boolean }): Promise<{ ok: true } | { ok: false; error: string }>
  /** bans, or re-bans with a new reason and end; `untilSeconds` absent bans until unbanned */
  banPubkey(community: string, pubkey: string, reason: string, untilSeconds?: number): Promise<void>
  /** the ban in force at `nowSeconds`; a timed ban whose end is <= now is no longer a ban */
  isBanned(community: string, pubkey: string, nowSeconds: number): Promise<{ reason: string } | undefined>
  unbanPubkey(community: string, pubkey: string): Promise<void>
  /** bans in force at `nowSeconds`, by pubkey */
  listBans(community: string, nowSeconds: number): Promise<BanRecord[]>
  close(): Promise<void>
}

export const COMMUNITY_ID_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/

/** The embedded default (DESIGN §9): one community answering on the loopback names. */
export const DEFAULT_COMMUNITY: CommunityRecord = { id: 'default', name: 'default', hosts: ['localhost', '127.0.0.1', '[::1]'], agents: [], admins: [] }

/** A fresh data directory starts with the default community, whichever command touches it first. */
export async function seedDefaultCommunity(store: CommunityStore): Promise<void> {
  if ((await store.list()).length === 0) await store.put(DEFAULT_COMMUNITY)
}
