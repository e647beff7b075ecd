// What a community actor does with a write: the checks before the store (kind rules, banned events, the
// inbound guard, write policy, NIP-29 plan, presence), the store call (its result comes back as Saved or,
// when a commit outlived its deadline, as LateCommit), and what follows an accepted write (channel change,
// fan-out here and to the other nodes). OK is sent only after commit.
import type { SaveOutcome } from '../../infra/store/event-store.js'
import { KIND_AUTH, kindClass } from '../../protocols/nip01/kinds.js'
import { channelTagOf } from '../../protocols/nip29.js'
import { isExpired } from '../../protocols/nip40.js'
import { reason } from '../../protocols/reasons.js'
import { assertNever } from '../../protocols/result.js'
import { type ActorContext, tell } from '../kernel/index.js'
import type { CommunityDeps, CommunityState } from './community-actor.js'
import { applyChannelPlanLogged, planChannelEvent, type RelayEvent } from './community-channels.js'
import { checkWrite } from './community-policy.js'
import { KIND_PRESENCE, setPresence } from './community-presence.js'
import { fanOut, loseMatching } from './community-reads.js'
import type { CommunityMsg, PublishOutcome } from './messages.js'

type Ctx = ActorContext<CommunityMsg>
type Publish = Extract<CommunityMsg, { type: 'Publish' }>
type Saved = Extract<CommunityMsg, { type: 'Saved' }>

const DUPLICATE = reason('duplicate', 'already have this event')

export async function onPublish(state: CommunityState, msg: Publish, ctx: Ctx, deps: CommunityDeps): Promise<CommunityState> {
  const { event, raw, reply } = msg
  // NIP-42: AUTH events travel in AUTH messages only and are never stored or relayed.
  if (event.kind === KIND_AUTH) return refuse(state, reply, reason('invalid', 'kind 22242 is only accepted in AUTH messages'))
  if (isExpired(event, deps.nowSeconds())) return refuse(state, reply, reason('invalid', 'event has expired'))
  const channel = channelTagOf(event)
  const order = state.writes.admit(msg, channel)
  if (order === 'held') return state
  if (order === 'full') return refuse(state, reply, reason('error', 'too many writes waiting in this community, retry shortly'))
  const { record, bannedEvents } = state.current
  // before the inbound guard: a banned event may still be among the recent ids
  if (bannedEvents.has(event.id)) return refuse(state, reply, reason('blocked', 'this event was banned by a moderator'))
  // The inbound guard answers resends cheaply; the store stays authoritative for everything it forgot.
  if (state.recent.has(event.id)) {
    reply({ accepted: true, message: DUPLICATE })
    return state
  }
  if (msg.conn) {
    const refused = await checkWrite(record, event, msg.conn, state.gate, deps.authRequired)
    if (refused) return refuse(state, reply, refused)
  }
  const planned = await planChannelEvent(event, state.channels)
  if (!planned.ok) return refuse(state, reply, planned.error)
  const plan = planned.value
  if (kindClass(event.kind) === 'ephemeral') {
    if (event.kind === KIND_PRESENCE) {
      const refused = await setPresence(state.presenceHolds, state.conns, event, raw, msg.conn, deps.presence).catch((error: unknown) => {
        deps.log.error({ err: error, community: deps.record.id }, 'presence store failed')
        return reason('error', 'could not record presence')
      })
      if (refused) return refuse(state, reply, refused)
    }
    await fanOut(state, event, raw, deps)
    deps.cluster.link.publishEvent(raw)
    reply({ accepted: true, message: '' })
    return state
  }
  // a channel change: later writes to this channel wait until it is applied (write-order.ts)
  const ordered = plan && plan.verdict.effect === 'apply' && plan.action.type !== 'post' ? plan.action.channel : undefined
  if (ordered !== undefined) state.writes.begin(ordered, deps.nowMs())
  save(state, { type: 'Saved', event, raw, outcome: { status: 'error' }, plan, ordered, reply }, ctx, deps)
  return state
}

/** Starts the store write; its outcome comes back as a Saved message (Akka's pipeTo). */
function save(state: CommunityState, template: Saved, ctx: Ctx, deps: CommunityDeps): void {
  const { event, raw, plan, ordered } = template
  const end = deps.metrics.storeLatency.startTimer({ op: 'save' })
  deps.store.save(deps.record.id, event, raw).then(
    (outcome) => {
      end()
      if (tell(ctx.self, { ...template, outcome })) return
      // stored, but this actor can't take the result now (down, or its mailbox full): the client hears the
      // truth at once, and the rest (fan-out, the channel change, the write order) follows when it can
      template.reply(outcome.status === 'saved' ? { accepted: true, message: '' } : { accepted: true, message: DUPLICATE })
      deliverLater(state, { type: 'LateCommit', event, raw, outcome, plan, ordered }, ctx, deps)
    },
    (error: unknown) => {
      end()
      deps.log.error({ err: error, community: deps.record.id, eventId: event.id }, 'store save failed')
      const late = (error as { late?: Promise<SaveOutcome> }).late
      if (tell(ctx.self, { ...template, outcome: { status: 'error', late } })) return
      template.reply({ accepted: false, message: reason('error', 'could not store the event') })
      if (ordered !== undefined) deliverLater(state, { type: 'WriteDone', channel: ordered }, ctx, deps)
      late?.then(
        (o) => deliverLater(state, { type: 'LateCommit', event, raw, outcome: o, plan }, ctx, deps),
        () => {},
      )
    },
  )
}

// A community that is down is respawned within 30 s (its kind supervisor's longest delay): results of its
// own I/O are offered again until then, with room to spare.
const REDELIVER_EVERY_MS = 500
const REDELIVER_FOR_MS = 60_000

/**
 * Results of the community's own I/O that it could not take when they came (down, or its mailbox full)
 * are offered again until it takes them. If it never does, the event's local subscriptions are closed with
 * `error:` (counted) and the other nodes still get it — never a silent gap (DESIGN §5).
 */
function deliverLater(state: CommunityState, msg: Extract<CommunityMsg, { type: 'LateCommit' | 'WriteDone' }>, ctx: Ctx, deps: CommunityDeps): void {
  const until = performance.now() + REDELIVER_FOR_MS
  const attempt = () => {
    if (tell(ctx.self, msg)) return
    if (performance.now() < until) {
      setTimeout(attempt, REDELIVER_EVERY_MS).unref?.()
      return
    }
    if (msg.type !== 'LateCommit' || msg.outcome.status !== 'saved') return
    deps.log.error({ community: deps.record.id, eventId: msg.event.id, channelChange: msg.plan !== undefined }, 'a stored event could not reach its community')
    deps.cluster.link.publishEvent(msg.raw)
    deps.lagged(loseMatching(state.index, msg.event, reason('error', 'an event could not be delivered here; subscribe again to catch up')))
  }
  attempt()
}

function refuse(state: CommunityState, reply: (o: PublishOutcome) => void, message: PublishOutcome['message']) {
  reply({ accepted: false, message } as PublishOutcome)
  return state
}

export async function onSaved(state: CommunityState, msg: Saved, ctx: Ctx, deps: CommunityDeps): Promise<CommunityState> {
  const { event, raw, outcome, reply } = msg
  try {
    switch (outcome.status) {
      case 'saved': {
        const changes = msg.plan ? await applyChannelPlanLogged(msg.plan, event, state.channels) : []
        await accepted(state, event, raw, outcome.removedIds, deps)
        await announce(state, changes, deps)
        reply({ accepted: true, message: '' })
        return state
      }
      case 'duplicate':
        state.recent.add(event.id)
        reply({ accepted: true, message: DUPLICATE })
        return state
      case 'superseded':
        return refuse(state, reply, reason('duplicate', 'a newer version of this event is already stored'))
      case 'deleted':
        return refuse(state, reply, reason('blocked', 'this event was deleted by its author'))
      case 'error':
        // a commit that outlived its deadline may still land: then it takes effect after all (fan-out, the
        // channel change), and a resend is a duplicate
        outcome.late?.then(
          (late) => deliverLater(state, { type: 'LateCommit', event, raw, outcome: late, plan: msg.plan }, ctx, deps),
          () => {},
        )
        return refuse(state, reply, reason('error', 'could not store the event'))
      default:
        return assertNever(outcome)
    }
  } finally {
    if (msg.ordered !== undefined) await republish(state, state.writes.end(msg.ordered), ctx, deps)
  }
}

/**
 * A commit whose result the actor did not take when it came (a commit that outlived its deadline, or one
 * that landed while the actor was down): make the node consistent with the store now.
 */
export async function onLateCommit(state: CommunityState, msg: Extract<CommunityMsg, { type: 'LateCommit' }>, ctx: Ctx, deps: CommunityDeps) {
  const { event, raw, outcome, plan } = msg
  deps.log.warn({ community: deps.record.id, eventId: event.id, status: outcome.status }, 'a commit takes effect late')
  try {
    if (outcome.status === 'saved') {
      const changes = plan ? await applyChannelPlanLogged(plan, event, state.channels) : []
      await accepted(state, event, raw, outcome.removedIds, deps)
      await announce(state, changes, deps)
    } else if (outcome.status === 'duplicate') state.recent.add(event.id)
  } finally {
    if (msg.ordered !== undefined) await republish(state, state.writes.end(msg.ordered), ctx, deps)
  }
  return state
}

/**
 * Writes that waited their turn, decided now in arrival order (each may wait again behind a new change).
 * One that fails is answered `error:` and the rest still go on: none is left without an answer.
 */
export async function republish(state: CommunityState, waiting: Publish[], ctx: Ctx, deps: CommunityDeps): Promise<void> {
  for (const m of waiting) {
    try {
      await onPublish(state, m, ctx, deps)
    } catch (error) {
      deps.log.error({ err: error, community: deps.record.id, eventId: m.event.id }, 'a write that waited its turn failed')
      m.reply({ accepted: false, message: reason('error', 'could not process the event') })
    }
  }
}

/** A channel change that failed with its result undeliverable: later writes to the channel may go on. */
export async function onWriteDone(state: CommunityState, channel: string, ctx: Ctx, deps: CommunityDeps) {
  await republish(state, state.writes.end(channel), ctx, deps)
  return state
}

async function accepted(state: CommunityState, event: Saved['event'], raw: string, removedIds: string[], deps: CommunityDeps) {
  for (const id of removedIds) state.recent.delete(id)
  state.recent.add(event.id)
  state.accepted++
  await fanOut(state, event, raw, deps)
  deps.cluster.link.publishEvent(raw)
}

/** The relay's own channel events: delivered here and to the other nodes like any accepted event. */
export async function announce(state: CommunityState, events: RelayEvent[], deps: CommunityDeps) {
  for (const c of events) {
    await fanOut(state, c.event, c.raw, deps)
    deps.cluster.link.publishEvent(c.raw)
  }
}
