// What a community actor does once the store has answered a write (Saved): a stored event's channel change
// is applied beside the actor (Applied comes back), then the event takes effect — delivered here and to the
// other nodes, the agent registry told of an announcement — and only now is its writer answered `OK true`:
// an OK true means committed (docs/architecture.md §7). A commit that landed late takes effect the same way,
// and so does a channel command, which changes rows but stores no event (Commanded).
import { KIND_ANNOUNCEMENT } from '../../protocols/agent-registry.js'
import { reason } from '../../protocols/reasons.js'
import { assertNever } from '../../protocols/result.js'
import { pipeTo } from '../kernel/index.js'
import { applyChannelPlanLogged, type ChannelPlan } from './community-channels.js'
import type { CommunityDeps, CommunityState, Ctx } from './community-state.js'
import { release } from './community-writes.js'
import { type AppliedMsg, type CommunityMsg, REDELIVER, type SavedMsg } from './messages.js'
import { tellRegistry } from './registry-tells.js'
import { announce } from './relay-events.js'
import { DUPLICATE, NOT_PROCESSED, NOT_STORED, refuse, storedAnswer } from './write-answers.js'
import type { Commanded } from './write-commands.js'
import { deliverLater, effectDone, lostCommit } from './write-effects.js'

export function onSaved(state: CommunityState, msg: SavedMsg, ctx: Ctx, deps: CommunityDeps): CommunityState {
  const { event, raw, outcome, reply, ordered } = msg
  effectDone(state)
  if (reply === undefined && outcome.status !== 'error')
    deps.log.warn({ community: deps.record.id, eventId: event.id, status: outcome.status }, 'a commit takes effect late')
  // a stored event ends its place in the write order when it has taken effect (onApplied), not here
  if (outcome.status === 'saved') {
    applyThen(
      state,
      { event, raw, removedIds: outcome.removedIds, plan: msg.plan, ordered, reply, from: msg.from, job: msg.job },
      ctx,
      deps,
    )
    return state
  }
  try {
    answerUnsaved(state, msg, ctx, deps)
  } finally {
    if (ordered !== undefined) release(state, ordered, ctx, deps)
  }
  return state
}

/** Not stored: a duplicate, a version the store already has a newer one of, a deleted event, or an error. */
function answerUnsaved(state: CommunityState, msg: SavedMsg, ctx: Ctx, deps: CommunityDeps): void {
  const { event, raw, outcome, reply } = msg
  switch (outcome.status) {
    case 'saved':
      return
    case 'duplicate':
      state.recent.add(event.id)
      reply?.({ accepted: true, message: DUPLICATE })
      return
    case 'superseded':
      refuse(state, reply, reason('duplicate', 'a newer version of this event is already stored'))
      return
    case 'deleted':
      refuse(state, reply, reason('blocked', 'this event was deleted by its author'))
      return
    case 'fenced':
      deps.metrics.jobReportsFenced.inc()
      refuse(state, reply, reason('restricted', outcome.why))
      return
    case 'error':
      // a commit that outlived its deadline may still land: then it takes effect after all (fan-out, the
      // channel change), and a resend is a duplicate
      if (outcome.late) {
        state.inflight.effects++
        outcome.late.then(
          (late) => deliverLater(state, { type: 'Saved', event, raw, outcome: late, plan: msg.plan, job: msg.job }, ctx, deps),
          () => effectDone(state),
        )
      }
      refuse(state, reply, NOT_STORED)
      return
    default:
      assertNever(outcome)
  }
}

type Stored = Omit<AppliedMsg, 'type' | 'changes'> & { plan?: ChannelPlan }

/** A channel change is applied first, beside the actor (its Applied comes back); any other event takes effect now. */
function applyThen(state: CommunityState, stored: Stored, ctx: Ctx, deps: CommunityDeps): void {
  const { plan, ...rest } = stored
  if (plan?.verdict.effect !== 'apply' || plan.action.type === 'post') {
    onApplied(state, { type: 'Applied', ...rest, changes: [], answer: storedAnswer(plan) }, ctx, deps)
    return
  }
  const applied = applyChannelPlanLogged(plan, stored.event, state.channels)
  state.inflight.effects++
  pipeTo(ctx.self, applied, (o): CommunityMsg => ({ type: 'Applied', ...rest, changes: o.ok ? o.value : [], piped: true }), {
    ...REDELIVER,
    onGiveUp: (m) => {
      rest.reply?.({ accepted: true, message: '' })
      lostCommit(state, m as AppliedMsg, deps)
    },
  })
}

/** The event (and its channel change) took effect: deliver it, and the relay's own events, then answer. */
export function onApplied(state: CommunityState, msg: AppliedMsg, ctx: Ctx, deps: CommunityDeps): CommunityState {
  const { event, raw, removedIds, changes, ordered, reply, answer } = msg
  if (msg.piped) effectDone(state)
  for (const id of removedIds) state.recent.delete(id)
  state.recent.add(event.id)
  state.accepted++
  state.feed.offer(event, raw)
  // a job's report follows its chunks, which go to the other nodes over the mesh (docs/jobs.md#in-a-cluster)
  const publish = () => deps.cluster.link.publishEvent(raw)
  if (!deps.jobs?.publishAfterChunks(msg.job, publish)) publish()
  announce(state, changes, deps)
  deps.jobs?.stored(event, raw, msg.job, removedIds)
  if (event.kind === KIND_ANNOUNCEMENT) {
    tellRegistry(deps, { type: 'Announced', pubkey: event.pubkey })
    // only a connection authenticated as its author becomes that agent's connection
    const from = msg.from !== undefined && state.conns.get(msg.from)?.authed.has(event.pubkey) ? msg.from : undefined
    state.agents.announced(from, event.pubkey, event.tags)
  }
  reply?.(answer ?? { accepted: true, message: '' })
  if (ordered !== undefined) release(state, ordered, ctx, deps)
  return state
}

/** A channel command was acted on: the relay's own events take effect, then its writer is answered. */
export function onCommanded(state: CommunityState, msg: Commanded, ctx: Ctx, deps: CommunityDeps): CommunityState {
  const { publish, ordered, outcome } = msg
  effectDone(state)
  try {
    if (!outcome.ok) {
      deps.log.error({ err: outcome.error, community: deps.record.id, eventId: publish.event.id }, 'channel command failed')
      publish.reply({ accepted: false, message: NOT_PROCESSED })
    } else if (!outcome.value.ok) publish.reply({ accepted: false, message: outcome.value.error })
    else {
      // a resend is answered from the duplicate guard: the event itself was never stored
      state.recent.add(publish.event.id)
      announce(state, outcome.value.value, deps)
      publish.reply({ accepted: true, message: '' })
    }
  } finally {
    if (ordered !== undefined) release(state, ordered, ctx, deps)
  }
  return state
}
