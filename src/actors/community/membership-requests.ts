// NIP-43 join (28934) and leave (28936) requests (docs/nip43.md): the relay's to decide, never stored nor
// relayed (a join carries its invite code). A join takes one use of its code and puts its author on the
// allowed list in one store transaction; a leave takes its author off the list. Both ask the store beside
// the actor and end in a MembershipSettled (membership-changes.ts). Neither passes the write policy or the
// kind rules: they are how one becomes, or stops being, a member.
import { checkLeaveRequest, isPlausibleClaim, KIND_RELAY_JOIN, parseJoinRequest } from '../../protocols/nip43.js'
import { type Reason, reason } from '../../protocols/reasons.js'
import type { CommunityDeps, CommunityState, Ctx } from './community-state.js'
import { ACCEPTED, isNamedMember, type MembershipDecision, settle } from './membership-changes.js'
import type { PublishMsg, PublishOutcome } from './messages.js'
import { refuse } from './write-answers.js'

const ALREADY_MEMBER: PublishOutcome = { accepted: true, message: reason('duplicate', 'you are already a member of this community') }
const NOT_A_MEMBER: PublishOutcome = { accepted: true, message: reason('duplicate', 'you are not a member of this community') }
// NIP-43: "Failed claims SHOULD use the same standard "restricted: " prefix"
const REFUSED: Record<'unknown' | 'expired' | 'used', Reason> = {
  unknown: reason('restricted', 'that is an invalid invite code'),
  expired: reason('restricted', 'that invite code is expired'),
  used: reason('restricted', 'that invite code was already used'),
}

export function onMembershipRequest(state: CommunityState, msg: PublishMsg, ctx: Ctx, deps: CommunityDeps): CommunityState {
  const { event, reply, conn } = msg
  // NIP-70's rule for both, `-` tag or not: a request about a membership is its author's own (and a leave
  // replayed by someone else cannot take a member out)
  if (conn !== undefined && !conn.authed.has(event.pubkey))
    return refuse(
      state,
      reply,
      reason('auth-required', 'a membership request is accepted only from a connection authenticated as its author'),
    )
  return event.kind === KIND_RELAY_JOIN ? join(state, msg, ctx, deps) : leave(state, msg, ctx, deps)
}

function join(state: CommunityState, msg: PublishMsg, ctx: Ctx, deps: CommunityDeps): CommunityState {
  const { event, reply } = msg
  const now = deps.nowSeconds()
  const claim = parseJoinRequest(event, now)
  if (!claim.ok) return refuse(state, reply, claim.error)
  if (isNamedMember(state.current.record, event.pubkey)) {
    reply(ALREADY_MEMBER)
    return state
  }
  if (!isPlausibleClaim(claim.value)) return refuse(state, reply, REFUSED.unknown)
  const decided = deps.invites.redeem(deps.record.id, claim.value, event.pubkey, now).then((r): MembershipDecision => {
    if (r === 'admitted') return { answer: ACCEPTED, change: { added: [event.pubkey], removed: [] } }
    return { answer: r === 'member' ? ALREADY_MEMBER : { accepted: false, message: REFUSED[r] } }
  })
  settle(state, decided, { reply }, ctx, deps)
  return state
}

function leave(state: CommunityState, msg: PublishMsg, ctx: Ctx, deps: CommunityDeps): CommunityState {
  const { event, reply } = msg
  const checked = checkLeaveRequest(event, deps.nowSeconds())
  if (!checked.ok) return refuse(state, reply, checked.error)
  if (isNamedMember(state.current.record, event.pubkey))
    return refuse(state, reply, reason('restricted', 'you are a member as an admin or agent of this community; its operators change that'))
  const decided = deps.communities
    .disallowPubkey(deps.record.id, event.pubkey)
    .then(
      (removed): MembershipDecision =>
        removed ? { answer: ACCEPTED, change: { added: [], removed: [event.pubkey] } } : { answer: NOT_A_MEMBER },
    )
  settle(state, decided, { reply }, ctx, deps)
  return state
}
