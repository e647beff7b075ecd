// A channel change another node forwarded, judged again by the owner as the community would judge it from a
// local client (docs/mesh.md §7): the forwarding node is trusted to be who it says (the tunnel proved it), not
// to have judged right, since its caches may be behind a ban or a policy change and its code may be wrong.
// The checks are the local path's own (prepare.ts's AUTH and NIP-70 and bans, community-policy.ts's write
// rules), run on the AUTH state the forwarding node reported for its client.
import type { CommunityRecord } from '../../infra/store/community-store.js'
import type { ForwardedAuth } from '../../protocols/mesh/session-frames.js'
import type { NostrEvent } from '../../protocols/nip01/event.js'
import { checkProtected } from '../../protocols/nip70.js'
import { type Reason, reason } from '../../protocols/reasons.js'
import { checkEventRules, checkWrite, type MembershipAnswers } from '../community/community-policy.js'

export interface ForwardedWriteDeps {
  record(community: string): CommunityRecord | undefined
  /** membership answers for the community of `record` */
  gate(record: CommunityRecord): MembershipAnswers
  banOf(community: string, pubkey: string): Promise<{ reason: string } | undefined>
  authRequired: boolean
  /** the key the relay signs for `community` with (infra/community-key.ts) */
  relayPubkey(community: string): string
  nowSeconds(): number
}

/** The refusal a local client would have had for `event`, or null. */
export async function judgeForwardedWrite(
  community: string,
  event: NostrEvent,
  auth: ForwardedAuth,
  d: ForwardedWriteDeps,
): Promise<Reason | null> {
  const record = d.record(community)
  if (!record) return reason('blocked', 'this community is not served here')
  // a host program's write has no client to judge: as on its own node, only the event's own rules apply
  if (auth.host) return checkEventRules(event, d.relayPubkey(community), d.nowSeconds())
  const writer = { authed: new Set(auth.pubkeys), owners: new Map(auth.owners) }
  if (d.authRequired && writer.authed.size === 0) return reason('auth-required', 'this relay requires authentication to publish')
  const prot = checkProtected(event, writer.authed)
  if (!prot.ok) return prot.error
  const ban = await d.banOf(community, event.pubkey)
  if (ban) return reason('blocked', ban.reason)
  const owner = writer.owners.get(event.pubkey)
  const ownerBan = owner === undefined ? undefined : await d.banOf(community, owner)
  if (ownerBan) return reason('blocked', `the owner of this agent is banned: ${ownerBan.reason}`)
  return (
    checkEventRules(event, d.relayPubkey(community), d.nowSeconds()) ??
    (await checkWrite(record, event, writer, d.gate(record), d.authRequired))
  )
}
