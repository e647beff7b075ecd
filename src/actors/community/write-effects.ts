// What a write the store took still owes after its answer, when the actor could not take the result of its
// own I/O (down until its respawn, or its mailbox full): the result is offered again until it is taken, and
// if it never is, the event's local subscriptions are closed with `error:` (counted) while the other nodes
// still get it — never a silent gap (docs/architecture.md §10).
import type { NostrEvent } from '../../protocols/nip01/event.js'
import { reason } from '../../protocols/reasons.js'
import { tellUntilTaken } from '../kernel/index.js'
import type { CommunityDeps, CommunityState, CommunitySurvivors, Ctx } from './community-state.js'
import { loseMatching } from './live-feed.js'
import { type AppliedMsg, REDELIVER, type SavedMsg } from './messages.js'

type Owed = SavedMsg | AppliedMsg | { type: 'WriteDone'; channel: string }

const NOT_DELIVERED_HERE = reason('error', 'an event could not be delivered here; subscribe again to catch up')

/** A store this actor started took effect (or never will): community-reads.ts stops expecting its live copy. */
export const effectDone = (state: Pick<CommunitySurvivors, 'inflight'>) => {
  state.inflight.effects = Math.max(0, state.inflight.effects - 1)
}

/** Offers `msg` to this actor until it takes it; lostCommit if it never does. */
export function deliverLater(state: CommunityState, msg: Owed, ctx: Ctx, deps: CommunityDeps): void {
  tellUntilTaken(ctx.self, msg, { ...REDELIVER, onGiveUp: () => lostCommit(state, msg, deps) })
}

/** A write's result never reached this actor: a stored event is published to the other nodes and lost here. */
export function lostCommit(state: Pick<CommunitySurvivors, 'index' | 'inflight'>, msg: Owed, deps: CommunityDeps): void {
  if (msg.type === 'WriteDone') return
  // every Saved is counted as an effect in flight, an Applied only when it came back from beside the actor
  if (msg.type === 'Saved' || msg.piped) effectDone(state)
  if (msg.type === 'Saved' && msg.outcome.status !== 'saved') return
  deps.log.error({ community: deps.record.id, eventId: msg.event.id }, 'a stored event could not reach its community')
  lostEvents(state, [{ event: msg.event, raw: msg.raw }, ...(msg.type === 'Applied' ? msg.changes : [])], deps)
}

/** Events this actor will not deliver: the other nodes get them, the subscriptions here they match are closed. */
export function lostEvents(
  state: Pick<CommunitySurvivors, 'index'>,
  events: { event: NostrEvent; raw: string }[],
  deps: CommunityDeps,
): void {
  for (const e of events) {
    deps.cluster.link.publishEvent(e.raw)
    deps.lagged(loseMatching(state.index, e.event, NOT_DELIVERED_HERE))
  }
}
