// NIP-43 invites (kind 28935, docs/nip43.md): "relays must explicitly opt-in to this behavior by generating
// claims on the fly when requested". A REQ whose filters name kind 28935, from a connection authenticated as
// someone who may invite, gets one fresh single-use code, relay-signed, in its page before EOSE. Nothing of it
// is stored but the code's row; its REQ was charged an EVENT's budget as well (connection/prepare.ts).
import { type InviteStore, newInviteCode } from '../../infra/store/invite-store.js'
import { type Filter, matchFilter } from '../../protocols/nip01/filter.js'
import { asksForInvite, asksOnlyForInvite, DEFAULT_INVITE_SECONDS, inviteTemplate } from '../../protocols/nip43.js'
import { type Reason, reason } from '../../protocols/reasons.js'
import type { AccessGate } from './access-gate.js'
import type { CommunityDeps } from './community-state.js'
import type { ConnView } from './subscription-index.js'

/**
 * Unused codes one pubkey may hold at once from 28935 requests: an admin handing out invites by hand needs
 * dozens; a script minting thousands is refused until they are used or expire (NIP-86 createinvite makes a
 * code of many uses instead).
 */
export const MAX_OPEN_INVITES = 100

export type InviteDeps = Pick<CommunityDeps, 'record' | 'sign' | 'nowSeconds'> & { invites: Pick<InviteStore, 'create'> }

/**
 * The invite this REQ is given (its raw event), or none. A REQ that asks for nothing else is closed with the
 * reason when it gets none; one that also asks for other kinds is served without it.
 */
export async function mintInvite(
  filters: readonly Filter[],
  conn: ConnView,
  gate: AccessGate,
  deps: InviteDeps,
): Promise<string[] | Reason> {
  if (!asksForInvite(filters)) return []
  const only = asksOnlyForInvite(filters)
  const inviter = await gate.inviterAmong([...conn.authed])
  if (inviter === undefined) {
    if (!only) return []
    return conn.authed.size === 0
      ? reason('auth-required', 'an invite is given only after authentication')
      : reason('restricted', 'only the admins of this community (and its members, where it allows) may ask for an invite')
  }
  const now = deps.nowSeconds()
  const code = newInviteCode()
  const event = deps.sign(inviteTemplate(code, inviter), now)
  if (!filters.some((f) => matchFilter(f, event))) return []
  const invite = { code, createdBy: inviter, expiresAtSeconds: now + DEFAULT_INVITE_SECONDS, uses: 1 }
  if (!(await deps.invites.create(deps.record.id, invite, now, MAX_OPEN_INVITES)))
    return only ? reason('rate-limited', `${MAX_OPEN_INVITES} of your invites are unused; ask again once some are used or expired`) : []
  return [JSON.stringify(event)]
}
