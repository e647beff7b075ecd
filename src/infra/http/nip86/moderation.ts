// The NIP-86 moderation methods (docs/nip86-methods.md): allow and ban lists, the community's relay info,
// kind rules, IP blocks, timed bans and access policy. Every one acts on the addressed community only and
// may be called by its admins and by operators (methods.ts has checked that).

import { parseAddressRange } from '../../../protocols/address-range.js'
import {
  type ModerationMethod,
  type Nip86Response,
  parseBanPubkeyParams,
  toNip86Error,
  toNip86Result,
} from '../../../protocols/nip86/methods.js'
import {
  type CommunityPolicyParams,
  parseCommunityPolicyParams,
  parseEventIdParams,
  parseIpParams,
  parseKindParam,
  parseRelayDescriptionParam,
  parseRelayIconParam,
  parseRelayNameParam,
  parseTimeoutPubkeyParams,
} from '../../../protocols/nip86/moderation-params.js'
import { reason } from '../../../protocols/reasons.js'
import { assertNever, type Result } from '../../../protocols/result.js'
import type { Logger } from '../../log.js'
import type { CommunitySettings, KindRules, ListedEntry } from '../../store/community-store.js'

export interface ModerationOps {
  /** a ban that ends at now + seconds, by the same path as banpubkey (sockets closed on every node); its end */
  timeoutPubkey(community: string, pubkey: string, reason: string, seconds: number): Promise<number>
  unbanPubkey(community: string, pubkey: string): Promise<void>
  /** NIP-86: allowing a pubkey also lifts its ban */
  allowPubkey(community: string, pubkey: string, reason: string): Promise<void>
  unallowPubkey(community: string, pubkey: string): Promise<void>
  listAllowedPubkeys(community: string): Promise<ListedEntry[]>
  /** the ban row (a resubmission is refused), then the stored event deleted */
  banEvent(community: string, id: string, reason: string): Promise<void>
  allowEvent(community: string, id: string): Promise<void>
  listBannedEvents(community: string): Promise<ListedEntry[]>
  /** merged into the stored settings (and the name), then every node re-reads them; false when gone */
  updateCommunity(community: string, patch: Partial<CommunitySettings> & { name?: string }): Promise<boolean>
  /** the rule stored, then every node re-reads it */
  setKindRule(community: string, kind: number, rule: 'allow' | 'disallow'): Promise<void>
  kindRules(community: string): Promise<KindRules | undefined>
  blockIp(community: string, ip: string, reason: string): Promise<void>
  unblockIp(community: string, ip: string): Promise<void>
  listBlockedIps(community: string): Promise<ListedEntry[]>
}

// The banned socket reads this in its `blocked:` NOTICE; NIP-86's reason is optional.
const DEFAULT_TIMEOUT_REASON = 'timed out by a community admin'

const GONE = toNip86Error(reason('invalid', 'community no longer exists'))
const done = toNip86Result(true)

/** NIP-86 results are `true` for every change, so removing what was not listed is `true` as well. */
export async function callModerationMethod(
  ops: ModerationOps,
  log: Logger,
  community: string,
  by: string,
  method: ModerationMethod,
  params: unknown[],
): Promise<Nip86Response> {
  switch (method) {
    case 'unbanpubkey':
    case 'allowpubkey':
    case 'unallowpubkey': {
      const p = parseBanPubkeyParams(params)
      if (!p.ok) return toNip86Error(p.error)
      const { pubkey } = p.value
      if (method === 'unbanpubkey') await ops.unbanPubkey(community, pubkey)
      else if (method === 'allowpubkey') await ops.allowPubkey(community, pubkey, p.value.reason ?? '')
      else await ops.unallowPubkey(community, pubkey)
      log.info({ community, by, pubkey, method }, 'nip86: pubkey lists changed')
      return done
    }
    case 'listallowedpubkeys':
      return toNip86Result((await ops.listAllowedPubkeys(community)).map((e) => ({ pubkey: e.value, reason: e.reason })))
    case 'banevent':
    case 'allowevent': {
      const p = parseEventIdParams(params)
      if (!p.ok) return toNip86Error(p.error)
      if (method === 'banevent') await ops.banEvent(community, p.value.value, p.value.reason ?? '')
      else await ops.allowEvent(community, p.value.value)
      log.info({ community, by, id: p.value.value, method }, 'nip86: event lists changed')
      return done
    }
    case 'listbannedevents':
      return toNip86Result((await ops.listBannedEvents(community)).map((e) => ({ id: e.value, reason: e.reason })))
    case 'changerelayname':
      return update(ops, log, community, by, parseRelayNameParam(params), (name) => ({ name }))
    case 'changerelaydescription':
      return update(ops, log, community, by, parseRelayDescriptionParam(params), (description) => ({ description }))
    case 'changerelayicon':
      return update(ops, log, community, by, parseRelayIconParam(params), (icon) => ({ icon }))
    case 'setcommunitypolicy':
      return update(ops, log, community, by, parseCommunityPolicyParams(params), (policy: CommunityPolicyParams) => policy)
    case 'allowkind':
    case 'disallowkind': {
      const kind = parseKindParam(params)
      if (!kind.ok) return toNip86Error(kind.error)
      await ops.setKindRule(community, kind.value, method === 'allowkind' ? 'allow' : 'disallow')
      log.info({ community, by, kind: kind.value, method }, 'nip86: kind rule set')
      return done
    }
    case 'listallowedkinds':
      return toNip86Result((await ops.kindRules(community))?.allowed ?? [])
    case 'listdisallowedkinds':
      return toNip86Result((await ops.kindRules(community))?.disallowed ?? [])
    case 'blockip':
    case 'unblockip': {
      const p = parseIpParams(params)
      if (!p.ok) return toNip86Error(p.error)
      const ip = parseAddressRange(p.value.value)
      if (!ip.ok) return toNip86Error(reason('invalid', 'ip must be an IPv4 or IPv6 address or a CIDR range'))
      if (method === 'blockip') await ops.blockIp(community, p.value.value, p.value.reason ?? '')
      else await ops.unblockIp(community, p.value.value)
      log.info({ community, by, ip: p.value.value, method }, 'nip86: ip list changed')
      return done
    }
    case 'listblockedips':
      return toNip86Result((await ops.listBlockedIps(community)).map((e) => ({ ip: e.value, reason: e.reason })))
    case 'timeoutpubkey': {
      const p = parseTimeoutPubkeyParams(params)
      if (!p.ok) return toNip86Error(p.error)
      const { pubkey, seconds } = p.value
      const until = await ops.timeoutPubkey(community, pubkey, p.value.reason ?? DEFAULT_TIMEOUT_REASON, seconds)
      log.info({ community, by, pubkey, until }, 'nip86: pubkey timed out')
      return done
    }
    default:
      return assertNever(method)
  }
}

async function update<T>(
  ops: ModerationOps,
  log: Logger,
  community: string,
  by: string,
  parsed: Result<T>,
  toPatch: (value: T) => Partial<CommunitySettings> & { name?: string },
): Promise<Nip86Response> {
  if (!parsed.ok) return toNip86Error(parsed.error)
  const patch = toPatch(parsed.value)
  if (!(await ops.updateCommunity(community, patch))) return GONE
  log.info({ community, by, fields: Object.keys(patch) }, 'nip86: community settings changed')
  return done
}
