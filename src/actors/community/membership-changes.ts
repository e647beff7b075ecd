// A change of the community's members takes effect beside the actor (docs/nip43.md): the membership answers
// cached here and on the other nodes are dropped, the relay's 8000/8001 are stored, the 13534 list is
// republished; the events and the asker's answer come back as MembershipSettled. What starts one: a NIP-43
// join or leave (membership-requests.ts), or the host's change of the allowed list (MembersChanged, NIP-86).
import type { CommunityRecord } from '../../infra/store/community-store.js'
import { asVerified } from '../../protocols/nip01/event.js'
import { listedMembers, listedMembersCap, memberChangeTemplate } from '../../protocols/nip43.js'
import { pipeTo, type TypedRef, tellUntilTaken } from '../kernel/index.js'
import { broadcastLogged } from './cluster-control.js'
import type { RelayEvent } from './community-channels.js'
import type { CommunityDeps, CommunityState, CommunitySurvivors, Ctx } from './community-state.js'
import { MemberList } from './member-list.js'
import { type CommunityMsg, type MembersChange, type PublishOutcome, REDELIVER } from './messages.js'
import { announce, lostAnnounce } from './relay-events.js'
import { NOT_PROCESSED } from './write-answers.js'
import { effectDone, lostEvents } from './write-effects.js'

type Msg<T extends CommunityMsg['type']> = Extract<CommunityMsg, { type: T }>

/** What a membership step decided: the asker's answer, and the change to publish when there is one. */
export interface MembershipDecision {
  answer: PublishOutcome
  change?: MembersChange
}

export const ACCEPTED: PublishOutcome = { accepted: true, message: '' }

/** A member whatever the allowed list says: the record names them (an admin, a roster agent). */
export const isNamedMember = (record: CommunityRecord, pubkey: string) =>
  record.admins.includes(pubkey) || record.agents.some((a) => a.pubkey === pubkey)

/**
 * After `decided` (the store's decision), publish its change beside the actor; the answer goes to `reply`
 * once the change's events are stored. A failure to publish them leaves the decision standing (logged): the
 * member list follows at the next change. A failed decision goes to supervision (onMembershipSettled).
 */
export function settle(
  state: CommunityState,
  decided: Promise<MembershipDecision>,
  to: { reply?: (o: PublishOutcome) => void; done?: () => void },
  ctx: Ctx,
  deps: CommunityDeps,
): void {
  state.inflight.effects++
  const settled = decided.then(async ({ answer, change }) => {
    const events = change
      ? await publishChange(state, change, deps).catch((error: unknown) => {
          deps.log.error({ err: error, community: deps.record.id }, 'membership change not published')
          return []
        })
      : []
    return { answer, events }
  })
  pipeTo(ctx.self, settled, (outcome): CommunityMsg => ({ type: 'MembershipSettled', outcome, ...to }), {
    ...REDELIVER,
    onGiveUp: (m) => lostSettled(state, m as Msg<'MembershipSettled'>, deps),
  })
}

async function publishChange(state: CommunityState, change: MembersChange, deps: CommunityDeps): Promise<RelayEvent[]> {
  // the change is in the store: no node may go on answering from a membership read of before it
  state.gate.invalidate({ op: 'InvalidateMembers' })
  await broadcastLogged(deps, 'cache-invalidation', { op: 'InvalidateMembers' })
  const now = deps.nowSeconds()
  const out: RelayEvent[] = []
  const each = [...change.added.map((p) => [p, true] as const), ...change.removed.map((p) => [p, false] as const)]
  for (const [pubkey, added] of each) {
    const event = asVerified(deps.sign(memberChangeTemplate(pubkey, added), now))
    const raw = JSON.stringify(event)
    if ((await deps.store.save(deps.record.id, event, raw)).status === 'saved') out.push({ event, raw })
  }
  await state.memberList.publish()
  return out
}

/**
 * The community's member list (NIP-43: "a member tag ... for each member"): its admins, its roster's agents
 * and its allowed list, as the `members` policies count them, up to the cap (protocols/nip43.ts).
 */
export function createMemberList(self: TypedRef<CommunityMsg>, s: CommunitySurvivors, deps: CommunityDeps): MemberList {
  const community = deps.record.id
  const cap = listedMembersCap(deps.limits)
  return new MemberList({
    community,
    store: deps.store,
    sign: deps.sign,
    async members() {
      const { admins, agents } = s.current.record
      const allowed = await deps.communities.listAllowedPubkeys(community, cap)
      return listedMembers(
        admins,
        agents.map((a) => a.pubkey),
        allowed.map((e) => e.value),
        cap,
      )
    },
    started: () => {
      s.inflight.effects++
    },
    ended: () => effectDone(s),
    announce: (stored) => {
      const msg: CommunityMsg = { type: 'Announce', events: [stored], from: 'member-list' }
      tellUntilTaken(self, msg, { ...REDELIVER, onGiveUp: () => lostAnnounce(s, msg, deps) })
    },
    nowSeconds: deps.nowSeconds,
    log: deps.log,
  })
}

/** The host changed the allowed list: who became or stopped being a member is published. */
export function onMembersChanged(state: CommunityState, msg: Msg<'MembersChanged'>, ctx: Ctx, deps: CommunityDeps): CommunityState {
  const { record } = state.current
  // an admin or a roster agent was a member before the change and still is one after it
  const change = {
    added: msg.added.filter((p) => !isNamedMember(record, p)),
    removed: msg.removed.filter((p) => !isNamedMember(record, p)),
  }
  settle(state, Promise.resolve({ answer: ACCEPTED, change }), { done: msg.done }, ctx, deps)
  return state
}

export function onMembershipSettled(state: CommunityState, msg: Msg<'MembershipSettled'>, deps: CommunityDeps): CommunityState {
  const { outcome, reply, done } = msg
  effectDone(state)
  try {
    if (!outcome.ok) {
      deps.log.error({ err: outcome.error, community: deps.record.id }, 'membership change failed')
      reply?.({ accepted: false, message: NOT_PROCESSED })
      // an outage of the store behind it goes on to supervision, as a write's checks do
      throw outcome.error
    }
    announce(state, outcome.value.events, deps)
    reply?.(outcome.value.answer)
  } finally {
    done?.()
  }
  return state
}

/** A settled change this actor never took: its asker hears now; its events reach the other nodes and are lost here. */
export function lostSettled(
  state: Pick<CommunitySurvivors, 'index' | 'inflight'>,
  msg: Msg<'MembershipSettled'>,
  deps: CommunityDeps,
): void {
  effectDone(state)
  const { outcome } = msg
  msg.reply?.(outcome.ok ? outcome.value.answer : { accepted: false, message: NOT_PROCESSED })
  if (outcome.ok) lostEvents(state, outcome.value.events, deps)
  msg.done?.()
}
