// NIP-29 channel events that are acted on and answered but never stored (docs/channels.md "Invite codes"):
// a 9009 create-invite, and a 9021 join request carrying a code. A code is a secret; stored, either event would
// show it to every reader of the channel. The rows change in one store call each, so a code's last use admits
// exactly one join on any number of nodes; the relay's own 9000 and the new lists record the join instead.
// Run beside the actor, by the community (write-commands.ts) or by a mesh channel owner (channel-owner.ts).
import type { InviteCreated, InviteRedeemed } from '../../infra/store/channel-store.js'
import type { NostrEvent } from '../../protocols/nip01/event.js'
import type { ChannelAction } from '../../protocols/nip29.js'
import { MAX_INVITES_PER_CHANNEL } from '../../protocols/nip29-invites.js'
import { type Reason, reason } from '../../protocols/reasons.js'
import { err, ok, type Result } from '../../protocols/result.js'
import { type ChannelDeps, type ChannelPlan, membershipChanged, type RelayEvent } from './community-channels.js'

const NOT_CREATED: Record<Exclude<InviteCreated, 'created'>, Reason> = {
  exists: reason('duplicate', 'this channel already has that invite code'),
  full: reason('blocked', `this channel has ${MAX_INVITES_PER_CHANNEL} invite codes not yet used up or expired`),
  'no-channel': reason('restricted', 'no such channel in this community'),
}

const NOT_REDEEMED: Record<Exclude<InviteRedeemed, 'joined'>, Reason> = {
  member: reason('duplicate', 'already a member of this channel'),
  unknown: reason('restricted', 'unknown invite code for this closed channel'),
  'used-up': reason('restricted', 'this invite code is used up'),
  expired: reason('restricted', 'this invite code has expired'),
}

/** A plan whose verdict is `command`: the relay's events to deliver, or the refusal its writer hears. */
export async function runChannelCommand(plan: ChannelPlan, event: NostrEvent, d: ChannelDeps): Promise<Result<RelayEvent[]>> {
  const { action, verdict } = plan
  if (action.type === 'create-invite') return createInvite(action, event, d)
  if (action.type === 'join' && action.code !== undefined && verdict.effect === 'command')
    return joinWithCode(action.channel, action.code, verdict.redeem === true, event, d)
  return err(reason('error', 'not a channel command'))
}

async function createInvite(action: Extract<ChannelAction, { type: 'create-invite' }>, event: NostrEvent, d: ChannelDeps) {
  const { channel, code, maxUses, expiresAt } = action
  const invite = { code, maxUses, ...(expiresAt !== undefined && { expiresAt }), createdBy: event.pubkey, createdAt: event.created_at }
  const created = await d.channels.createInvite(d.community, channel, invite, d.nowSeconds())
  return created === 'created' ? ok([]) : err(NOT_CREATED[created])
}

/** A closed channel admits on the code (`redeem`); an open one admits anyway and leaves the code unused. */
async function joinWithCode(
  channel: string,
  code: string,
  redeem: boolean,
  event: NostrEvent,
  d: ChannelDeps,
): Promise<Result<RelayEvent[]>> {
  const pubkey = event.pubkey
  if (redeem) {
    const redeemed = await d.channels.redeemInvite(d.community, channel, code, pubkey, d.nowSeconds())
    if (redeemed !== 'joined') return err(NOT_REDEEMED[redeemed])
  } else await d.channels.putMember(d.community, channel, pubkey, [])
  const out: RelayEvent[] = []
  await membershipChanged(d, channel, pubkey, { self: true, joins: true }, out)
  return ok(out)
}
