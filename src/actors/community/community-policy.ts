// A community's own rules for writes (docs/architecture.md §6.3), checked by its actor before anything is stored: the write
// policy, the AUTH requirement, the NIP-86 kind rules and banned events. The relay's own events pass.
import type { CommunityRecord, CommunitySettings } from '../../infra/store/community-store.js'
import { KIND_DEPARTURE } from '../../protocols/agent-registry.js'
import { KIND_JOB_ASSIGNMENT } from '../../protocols/jobs.js'
import type { NostrEvent } from '../../protocols/nip01/event.js'
import { KIND_AUTH, KIND_DELETION, KIND_PRESENCE } from '../../protocols/nip01/kinds.js'
import { isManagementKind } from '../../protocols/nip29.js'
import { isExpired } from '../../protocols/nip40.js'
import { RELAY_MEMBERSHIP_KINDS } from '../../protocols/nip43.js'
import { type Reason, reason } from '../../protocols/reasons.js'
import { checkRoleDomains, mayAddress } from '../../protocols/role-domains.js'
import type { ConnView } from './subscription-index.js'

/** The membership answers a write needs (the access gate gives them; declared here so the gate can use the read policy below). */
export interface MembershipAnswers {
  /** from the roster and the cache alone; undefined when a lookup is needed */
  isMemberNow(pubkeys: readonly string[]): boolean | undefined
  isMember(pubkeys: readonly string[]): Promise<boolean>
}

/** The relay-wide `authRequired` forces AUTH in every community; a community may ask for it on its own. */
export const readPolicyOf = (s: CommunitySettings, authRequired: boolean) =>
  (authRequired || s.authRequired) && s.readPolicy === 'public' ? 'authenticated' : s.readPolicy
export const writePolicyOf = (s: CommunitySettings, authRequired: boolean) =>
  (authRequired || s.authRequired) && s.writePolicy === 'public' ? 'authenticated' : s.writePolicy

// Kinds the relay needs whatever the allow list says: deletion, presence, and NIP-29's channel events.
const isExemptKind = (kind: number) => kind === KIND_DELETION || kind === KIND_PRESENCE || isManagementKind(kind)

/** Who writes: the pubkeys a connection authenticated as, and each agent's owner (ConnView's, or a forwarded write's). */
export type WriterView = Pick<ConnView, 'authed' | 'owners'>

/**
 * What no community accepts from anyone: an AUTH event stored, an expired event, the relay's own kinds.
 * `relayPubkey`: the key the relay signs for this community with (infra/community-key.ts).
 */
export function checkEventRules(event: NostrEvent, relayPubkey: string, nowSeconds: number): Reason | null {
  // NIP-42: AUTH events travel in AUTH messages only and are never stored or relayed.
  if (event.kind === KIND_AUTH) return reason('invalid', 'kind 22242 is only accepted in AUTH messages')
  if (isExpired(event, nowSeconds)) return reason('invalid', 'event has expired')
  // a departure is the relay's word that an agent left: nobody else may say it (docs/agent-registry.md)
  // so is a job's assignment (docs/jobs.md): an agent acts on one as the relay's word
  if ((event.kind === KIND_DEPARTURE || event.kind === KIND_JOB_ASSIGNMENT) && event.pubkey !== relayPubkey)
    return reason('restricted', `kind ${event.kind} is published by the relay only`)
  // NIP-43: the member list, its changes and invites are signed by the relay
  if (RELAY_MEMBERSHIP_KINDS.has(event.kind) && event.pubkey !== relayPubkey)
    return reason('restricted', `kind ${event.kind} is published by the relay only`)
  return null
}

/** The roster's roles, built once per record (a record is replaced, never changed, on RecordChanged). */
const rolesByRecord = new WeakMap<CommunityRecord, Map<string, string | null>>()
function rolesOf(record: CommunityRecord): Map<string, string | null> {
  let roles = rolesByRecord.get(record)
  if (!roles) {
    roles = new Map(record.agents.map((a) => [a.pubkey, a.role ?? null]))
    rolesByRecord.set(record, roles)
  }
  return roles
}

/**
 * Role domains (protocols/role-domains.ts): free when the community has no policy, or the author no role.
 * `owner`: who attested the author on this connection; a key a roster agent attested has that agent's role.
 */
export function checkRoles(record: CommunityRecord, event: NostrEvent, owner?: string): Reason | null {
  const { roleRules, channelRoles } = record.settings
  if ((roleRules.length === 0 && channelRoles.length === 0) || isExemptKind(event.kind)) return null
  const roles = rolesOf(record)
  return checkRoleDomains(event, { rules: roleRules, channels: channelRoles }, (p) => roles.get(p), owner)
}

/**
 * Role domains for dispatched jobs: whether an agent may be given a job a requester asked for (the roster alone
 * judges both); undefined while the community has no rule (any agent may).
 */
export function assignableUnder(record: CommunityRecord): ((requester: string, agent: string) => boolean) | undefined {
  const rules = record.settings.roleRules
  if (rules.length === 0) return undefined
  const roles = rolesOf(record)
  return (requester, agent) => mayAddress(rules, (p) => roles.get(p), requester, agent)
}

/** The kind rules, then the role domains: everything decided from the record (and the connection's attestations). */
const checkRecord = (record: CommunityRecord, event: NostrEvent, conn: WriterView): Reason | null =>
  checkKind(record, event.kind) ?? checkRoles(record, event, conn.owners.get(event.pubkey))

export function checkKind(record: CommunityRecord, kind: number): Reason | null {
  const { allowed, disallowed } = record.kinds
  if (disallowed.includes(kind)) return reason('blocked', `kind ${kind} is not accepted in this community`)
  if (allowed.length > 0 && !allowed.includes(kind) && !isExemptKind(kind))
    return reason('blocked', `kind ${kind} is not accepted in this community`)
  return null
}

/** checkWrite from the record and the gate's cache: undefined when a membership lookup is needed. */
export function checkWriteNow(
  record: CommunityRecord,
  event: NostrEvent,
  conn: WriterView,
  gate: MembershipAnswers,
  authRequired: boolean,
): Reason | null | undefined {
  const policy = writePolicyOf(record.settings, authRequired)
  if (policy !== 'public' && conn.authed.size === 0)
    return reason('auth-required', 'this community accepts events only after authentication')
  if (policy === 'members') {
    const owner = conn.owners.get(event.pubkey)
    const member = gate.isMemberNow(owner ? [event.pubkey, owner] : [event.pubkey])
    if (member === undefined) return undefined
    if (!member) return reason('restricted', 'only members of this community may publish here')
  }
  return checkRecord(record, event, conn)
}

export async function checkWrite(
  record: CommunityRecord,
  event: NostrEvent,
  conn: WriterView,
  gate: MembershipAnswers,
  authRequired: boolean,
): Promise<Reason | null> {
  const policy = writePolicyOf(record.settings, authRequired)
  if (policy !== 'public' && conn.authed.size === 0)
    return reason('auth-required', 'this community accepts events only after authentication')
  // an attested agent writes on its owner's membership
  const owner = conn.owners.get(event.pubkey)
  if (policy === 'members' && !(await gate.isMember(owner ? [event.pubkey, owner] : [event.pubkey])))
    return reason('restricted', 'only members of this community may publish here')
  return checkRecord(record, event, conn)
}
