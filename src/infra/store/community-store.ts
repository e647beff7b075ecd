/** A community as the node knows it: where it answers, and who is an agent there (DESIGN §1). */
export type AgentTier = 'standard' | 'elevated' | 'platform'

export interface CommunityRecord {
  id: string
  name: string
  hosts: string[]
  agents: { pubkey: string; tier: AgentTier }[]
}

export interface CommunityStore {
  list(): Promise<CommunityRecord[]>
  /** insert or replace by id; a host already bound to another community is refused */
  put(record: CommunityRecord): Promise<{ ok: true } | { ok: false; error: string }>
  close(): Promise<void>
}

export const COMMUNITY_ID_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/

/** The embedded default (DESIGN §9): one community answering on the loopback names. */
export const DEFAULT_COMMUNITY: CommunityRecord = { id: 'default', name: 'default', hosts: ['localhost', '127.0.0.1', '[::1]'], agents: [] }

/** A fresh data directory starts with the default community, whichever command touches it first. */
export async function seedDefaultCommunity(store: CommunityStore): Promise<void> {
  if ((await store.list()).length === 0) await store.put(DEFAULT_COMMUNITY)
}
