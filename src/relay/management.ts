// The NIP-86 methods' effects, part of the composition root: roster, settings and list changes go to the store
// (the truth every node reads), then this node reconciles and tells the others (relay/communities.ts).
import type { ManagementOps } from '../infra/http/nip86/methods.js'
import type { CommunityStore } from '../infra/store/community-store.js'
import type { EventStore } from '../infra/store/event-store.js'
import { type InviteStore, newInviteCode } from '../infra/store/invite-store.js'
import { toBlockedRange } from '../protocols/address-range.js'
import { type ChannelRoles, type RoleRule, withChannelRoles, withRule } from '../protocols/role-domains.js'
import type { Communities } from './communities.js'

export interface ManagementOpsDeps {
  store: CommunityStore
  events: EventStore
  invites: Pick<InviteStore, 'create'>
  communities: Communities
  operators: ReadonlySet<string>
  /** the relay's ban path (relay/relay.ts): the row, then the pubkey's sockets closed on every node */
  banPubkey(community: string, pubkey: string, reason: string, untilSeconds?: number): Promise<void>
  /**
   * a blockip is in the store: close the sockets from `range` open on every node (the community's DisconnectIp,
   * broadcast), and drop every node's copy of the block list (the DisconnectIp carries that too)
   */
  disconnectIp(community: string, range: string, reason: string): void
  /** an unblockip is in the store: drop this node's copy of the block list now, and every other node's */
  blockListChanged(community: string): void
  /** config.ipv6PrefixLength: an IPv6 block is never narrower than the network a principal is counted as */
  ipv6PrefixLength: number
  nowSeconds(): number
}

export function createManagementOps(d: ManagementOpsDeps): ManagementOps {
  const recordOf = async (id: string) => (await d.store.list()).find((r) => r.id === id)
  const { store } = d
  return {
    isOperator: (pubkey) => d.operators.has(pubkey),
    async banPubkey(community, pubkey, reason) {
      // NIP-86: "Should automatically remove the pubkey from the allow list" (a timeout keeps it: it ends)
      const removed = await store.disallowPubkey(community, pubkey)
      await d.banPubkey(community, pubkey, reason)
      // the allow list changed: every node's membership answers are dropped (AccessGate caches them)
      await d.communities.announce(community)
      if (removed) await d.communities.membersChanged(community, { added: [], removed: [pubkey] })
    },
    async timeoutPubkey(community, pubkey, reason, seconds) {
      const until = d.nowSeconds() + seconds
      await d.banPubkey(community, pubkey, reason, until)
      return until
    },
    // bans are read from the store at every AUTH and write (ban-lookup.ts, no cache): nothing to announce
    unbanPubkey: (community, pubkey) => store.unbanPubkey(community, pubkey),
    listBans: (community) => store.listBans(community, d.nowSeconds()),
    async allowPubkey(community, pubkey, reason) {
      // NIP-86: "Should automatically remove the pubkey from the ban list"
      await store.unbanPubkey(community, pubkey)
      // a new reason for a listed pubkey is no new member (NIP-43's 8000)
      const listed = (await store.allowedAmong(community, [pubkey])).size > 0
      await store.allowPubkey(community, pubkey, reason)
      await d.communities.announce(community)
      if (!listed) await d.communities.membersChanged(community, { added: [pubkey], removed: [] })
    },
    async unallowPubkey(community, pubkey) {
      const removed = await store.disallowPubkey(community, pubkey)
      await d.communities.announce(community)
      if (removed) await d.communities.membersChanged(community, { added: [], removed: [pubkey] })
    },
    listAllowedPubkeys: (community) => store.listAllowedPubkeys(community),
    async banEvent(community, id, reason) {
      // the ban first: a copy resubmitted between the two steps is refused rather than stored again
      await store.banEvent(community, id, reason)
      // a job it requested is cancelled with it, in the store; its dispatcher takes it from its assignee
      d.communities.removed(community, await d.events.deleteEvents(community, [id]))
      // each community actor keeps the banned ids in memory: every node re-reads them now
      await d.communities.announce(community)
    },
    async allowEvent(community, id) {
      await store.allowEvent(community, id)
      await d.communities.announce(community)
    },
    listBannedEvents: (community) => store.listBannedEvents(community),
    async updateCommunity(community, patch) {
      if (!(await store.updateSettings(community, patch))) return false
      // every node's actors and NIP-11 read the record: re-read it here, InvalidateAll to the others
      await d.communities.announce(community)
      return true
    },
    async setKindRule(community, kind, rule) {
      await store.setKindRule(community, kind, rule)
      await d.communities.announce(community)
    },
    kindRules: async (community) => (await recordOf(community))?.kinds,
    async blockIp(community, ip, reason) {
      const range = blockedRange(ip, d.ipv6PrefixLength)
      // the row first: it is what every node checks at each new socket and NIP-86 call
      await store.blockIp(community, range, reason)
      d.disconnectIp(community, range, reason === '' ? 'this address is blocked' : reason)
    },
    async unblockIp(community, ip) {
      await store.unblockIp(community, blockedRange(ip, d.ipv6PrefixLength))
      d.blockListChanged(community)
    },
    listBlockedIps: (community) => store.listBlockedIps(community),
    async setAgentTier(community, pubkey, tier) {
      // read-modify-write of one roster: two admins changing it at the same instant may lose one change
      const record = await recordOf(community)
      if (!record) return false
      const agents = record.agents.filter((a) => a.pubkey !== pubkey)
      // a new tier keeps the agent's role; `none` takes it off the roster, role and all
      const role = record.agents.find((a) => a.pubkey === pubkey)?.role
      if (tier !== 'none') agents.push(role === undefined ? { pubkey, tier } : { pubkey, tier, role })
      const written = await store.put({ ...record, agents })
      if (!written.ok) throw new Error(`setagenttier: ${written.error}`)
      // reconcile stops the principal actors whose tier changed, here and (on InvalidateAll) on every node
      await d.communities.announce(community)
      return true
    },
    listAgents: async (community) => (await recordOf(community))?.agents,
    async setAgentRole(community, pubkey, role) {
      // read-modify-write of one roster, as setAgentTier
      const record = await recordOf(community)
      if (!record) return false
      const agent = record.agents.find((a) => a.pubkey === pubkey)
      if (!agent) return 'not-an-agent'
      const { role: _old, ...rest } = agent
      const agents = record.agents.map((a) => (a.pubkey === pubkey ? (role === null ? rest : { ...rest, role }) : a))
      const written = await store.put({ ...record, agents })
      if (!written.ok) throw new Error(`setagentrole: ${written.error}`)
      await d.communities.announce(community)
      return true
    },
    async updateRolePolicy(community, change) {
      // read-modify-write of the two lists (each replaced whole): two admins at the same instant may lose one
      const record = await recordOf(community)
      if (!record) return false
      const { roleRules, channelRoles } = record.settings
      const next = 'rule' in change ? withRule(roleRules, change.rule) : withChannelRoles(channelRoles, change.channel)
      if (!next.ok) return next
      const patch = 'rule' in change ? { roleRules: next.value as RoleRule[] } : { channelRoles: next.value as ChannelRoles[] }
      if (!(await store.updateSettings(community, patch))) return false
      await d.communities.announce(community)
      const settings = { roleRules, channelRoles, ...patch }
      return { ok: true, value: { rules: settings.roleRules, channels: settings.channelRoles } }
    },
    async rolePolicy(community) {
      const settings = (await recordOf(community))?.settings
      return settings && { rules: settings.roleRules, channels: settings.channelRoles }
    },
    async createInvite(community, by, seconds, uses) {
      const code = newInviteCode()
      const now = d.nowSeconds()
      await d.invites.create(community, { code, createdBy: by, expiresAtSeconds: now + seconds, uses }, now)
      return { code, expiresAt: now + seconds }
    },
    async createCommunity(record, via) {
      const created = await store.put(record, { create: true })
      if (created.ok) await d.communities.announce(via)
      return created
    },
    archiveCommunity: (id) => d.communities.archive(id),
    listCommunities: () => store.list(),
  }
}

/** moderation.ts checked the parameter with parseAddressRange, so a failure here is a bug */
function blockedRange(ip: string, ipv6PrefixLength: number): string {
  const range = toBlockedRange(ip, ipv6PrefixLength)
  if (!range.ok) throw new RangeError(range.error)
  return range.value
}
