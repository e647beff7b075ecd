// The NIP-86 methods' effects, part of the composition root: roster and community changes go to the store
// (the truth every node reads), then this node reconciles and tells the others (relay-communities.ts).
import type { ManagementOps } from './infra/http/management-methods'
import type { CommunityStore } from './infra/store/community-store'
import type { Communities } from './relay-communities'

export interface ManagementOpsDeps {
  store: CommunityStore
  communities: Communities
  operators: ReadonlySet<string>
  banPubkey(community: string, pubkey: string, reason: string): Promise<void>
  nowSeconds(): number
}

export function createManagementOps(d: ManagementOpsDeps): ManagementOps {
  const recordOf = async (id: string) => (await d.store.list()).find((r) => r.id === id)
  return {
    isOperator: (pubkey) => d.operators.has(pubkey),
    banPubkey: d.banPubkey,
    listBans: (community) => d.store.listBans(community, d.nowSeconds()),
    async setAgentTier(community, pubkey, tier) {
      // read-modify-write of one roster: two admins changing it at the same instant may lose one change
      const record = await recordOf(community)
      if (!record) return false
      const agents = record.agents.filter((a) => a.pubkey !== pubkey)
      if (tier !== 'none') agents.push({ pubkey, tier })
      const written = await d.store.put({ ...record, agents })
      if (!written.ok) throw new Error(`setagenttier: ${written.error}`)
      // reconcile stops the principal actors whose tier changed, here and (on InvalidateAll) on every node
      await d.communities.announce(community)
      return true
    },
    listAgents: async (community) => (await recordOf(community))?.agents,
    async createCommunity(record, via) {
      const created = await d.store.put(record, { create: true })
      if (created.ok) await d.communities.announce(via)
      return created
    },
    archiveCommunity: (id) => d.communities.archive(id),
    listCommunities: () => d.store.list(),
  }
}
