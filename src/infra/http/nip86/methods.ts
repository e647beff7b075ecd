// The NIP-86 methods (docs/nip86-methods.md): who may call each, and what it does. The caller is already
// authenticated (endpoint.ts); community methods act on the community whose host the call addressed.

import {
  parseCommunityIdParam,
  parseCreateCommunityParams,
  parseCreateInviteParams,
  parseSetAgentTierParams,
  type SetAgentTierParams,
} from '../../../protocols/nip86/community-params.js'
import {
  isNip86Method,
  NIP86_METHODS,
  type Nip86Method,
  type Nip86Request,
  type Nip86Response,
  OPERATOR_METHODS,
  parseBanPubkeyParams,
  toNip86Error,
  toNip86Result,
} from '../../../protocols/nip86/methods.js'
import { reason } from '../../../protocols/reasons.js'
import type { Result } from '../../../protocols/result.js'
import {
  type ChannelRoles,
  parseSetAgentRoleParams,
  parseSetChannelRolesParams,
  parseSetRoleDomainParams,
  type RoleRule,
} from '../../../protocols/role-domains.js'
import type { Logger } from '../../log.js'
import type { BanRecord, CommunityInput, CommunityRecord } from '../../store/community-store.js'
import { callModerationMethod, type ModerationOps } from './moderation.js'

/** What the methods do, wired by the relay (src/relay/relay.ts and src/relay/management.ts). */
export interface ManagementOps extends ModerationOps {
  /** configured operators and the relay's own pubkey */
  isOperator(pubkey: string): boolean
  /** the relay's ban path: off the allow list (NIP-86), the row, then the pubkey's sockets closed on every node */
  banPubkey(community: string, pubkey: string, reason: string): Promise<void>
  listBans(community: string): Promise<BanRecord[]>
  /** the roster entry written to the store, then every node re-reads it; false when the community is gone */
  setAgentTier(community: string, pubkey: string, tier: SetAgentTierParams['tier']): Promise<boolean>
  listAgents(community: string): Promise<CommunityRecord['agents'] | undefined>
  /** a roster agent's role (null: none); 'not-an-agent' when the pubkey has no tier here, false when the community is gone */
  setAgentRole(community: string, pubkey: string, role: string | null): Promise<boolean | 'not-an-agent'>
  /** replace one role's rule or one channel's roles in the community's policy (read-modify-write) */
  updateRolePolicy(
    community: string,
    change: { rule: RoleRule } | { channel: ChannelRoles },
  ): Promise<Result<{ rules: RoleRule[]; channels: ChannelRoles[] }> | false>
  rolePolicy(community: string): Promise<{ rules: RoleRule[]; channels: ChannelRoles[] } | undefined>
  /** a new NIP-43 invite code of `uses` uses, made by `by`, for `seconds` from now; its code and end */
  createInvite(community: string, by: string, seconds: number, uses: number): Promise<{ code: string; expiresAt: number }>
  /** a new id only; served on this node at once, on the others when they hear of it */
  createCommunity(record: CommunityInput, via: string): Promise<{ ok: true } | { ok: false; error: string }>
  archiveCommunity(id: string): Promise<boolean>
  listCommunities(): Promise<CommunityRecord[]>
}

// A ban row needs a reason and the banned socket gets it in its `blocked:` NOTICE; NIP-86's is optional.
const DEFAULT_BAN_REASON = 'banned by a relay operator'

export interface Caller {
  pubkey: string
  operator: boolean
}

/** May this caller use this community's management endpoint at all? Its admins and the operators may. */
export const canManage = (record: CommunityRecord, caller: Caller) => caller.operator || record.admins.includes(caller.pubkey)

/** 403 for a community admin calling an operator-only method; unknown methods are for `call` to refuse. */
export const isAllowed = (method: string, caller: Caller) => caller.operator || !OPERATOR_METHODS.has(method as Nip86Method)

export async function callMethod(
  ops: ManagementOps,
  log: Logger,
  community: string,
  caller: Caller,
  request: Nip86Request,
): Promise<Nip86Response> {
  const { method, params } = request
  if (!isNip86Method(method)) return toNip86Error(reason('unsupported', `method ${method.slice(0, 64)}`))
  const by = caller.pubkey
  switch (method) {
    case 'supportedmethods':
      return toNip86Result([...NIP86_METHODS])
    case 'banpubkey': {
      const ban = parseBanPubkeyParams(params)
      if (!ban.ok) return toNip86Error(ban.error)
      await ops.banPubkey(community, ban.value.pubkey, ban.value.reason ?? DEFAULT_BAN_REASON)
      log.info({ community, by, pubkey: ban.value.pubkey }, 'nip86: pubkey banned')
      return toNip86Result(true)
    }
    case 'listbannedpubkeys': {
      // `until` (unix seconds) only on a timed ban (timeoutpubkey): NIP-86 names pubkey and reason only
      const bans = await ops.listBans(community)
      return toNip86Result(
        bans.map((b) => ({ pubkey: b.pubkey, reason: b.reason, ...(b.untilSeconds !== undefined && { until: b.untilSeconds }) })),
      )
    }
    case 'setagenttier': {
      const p = parseSetAgentTierParams(params)
      if (!p.ok) return toNip86Error(p.error)
      if (!(await ops.setAgentTier(community, p.value.pubkey, p.value.tier)))
        return toNip86Error(reason('invalid', 'community no longer exists'))
      log.info({ community, by, pubkey: p.value.pubkey, tier: p.value.tier }, 'nip86: agent tier set')
      return toNip86Result(true)
    }
    case 'listagents': {
      const agents = await ops.listAgents(community)
      return toNip86Result((agents ?? []).map((a) => ({ pubkey: a.pubkey, tier: a.tier, ...(a.role !== undefined && { role: a.role }) })))
    }
    case 'setagentrole': {
      const p = parseSetAgentRoleParams(params)
      if (!p.ok) return toNip86Error(p.error)
      const set = await ops.setAgentRole(community, p.value.pubkey, p.value.role)
      if (set === 'not-an-agent')
        return toNip86Error(reason('invalid', 'not an agent of this community: give it a tier first (setagenttier)'))
      if (!set) return toNip86Error(reason('invalid', 'community no longer exists'))
      log.info({ community, by, pubkey: p.value.pubkey, role: p.value.role }, 'nip86: agent role set')
      return toNip86Result(true)
    }
    case 'setroledomain':
    case 'setchannelroles': {
      const p = method === 'setroledomain' ? parseSetRoleDomainParams(params) : parseSetChannelRolesParams(params)
      if (!p.ok) return toNip86Error(p.error)
      const change = 'from' in p.value ? { rule: p.value } : { channel: p.value }
      const updated = await ops.updateRolePolicy(community, change)
      if (updated === false) return toNip86Error(reason('invalid', 'community no longer exists'))
      if (!updated.ok) return toNip86Error(updated.error)
      log.info({ community, by, method, ...change }, 'nip86: role policy changed')
      return toNip86Result(true)
    }
    case 'listroledomains': {
      const policy = await ops.rolePolicy(community)
      return toNip86Result(policy ?? { rules: [], channels: [] })
    }
    case 'createinvite': {
      const p = parseCreateInviteParams(params)
      if (!p.ok) return toNip86Error(p.error)
      const { code, expiresAt } = await ops.createInvite(community, by, p.value.seconds, p.value.uses)
      // the code itself stays out of the log: it admits whoever holds it
      log.info({ community, by, uses: p.value.uses, expiresAt }, 'nip86: invite created')
      return toNip86Result({ code, expires_at: expiresAt, uses: p.value.uses })
    }
    case 'createcommunity': {
      const p = parseCreateCommunityParams(params)
      if (!p.ok) return toNip86Error(p.error)
      const { id, hosts, name, admins } = p.value
      const created = await ops.createCommunity({ id, name: name ?? id, hosts, agents: [], admins }, community)
      if (!created.ok) return toNip86Error(reason('invalid', created.error))
      log.info({ by, id, hosts }, 'nip86: community created')
      return toNip86Result(true)
    }
    case 'archivecommunity': {
      const id = parseCommunityIdParam(params)
      if (!id.ok) return toNip86Error(id.error)
      if (!(await ops.archiveCommunity(id.value))) return toNip86Error(reason('invalid', `no active community ${id.value}`))
      log.info({ by, id: id.value }, 'nip86: community archived')
      return toNip86Result(true)
    }
    case 'listcommunities': {
      const all = await ops.listCommunities()
      return toNip86Result(all.map((c) => ({ id: c.id, name: c.name, hosts: c.hosts })))
    }
    default:
      // every method not answered above is a moderation method, or this stops compiling
      return callModerationMethod(ops, log, community, by, method, params)
  }
}
