// What a community actor does with a write. No step awaits (DESIGN §3): the checks that need no I/O run in
// the handler; those that do (the write policy's membership, the NIP-29 plan's fresh rows, the presence store)
// run beside the actor and come back as Prepared / PresenceSet; the store call comes back as Saved (or, when a
// commit outlived its deadline, as LateCommit); a channel change is applied beside the actor and comes back as
// Applied. Many writes are in flight at once; where order matters (a channel change and the writes to that
// channel behind it) write-order.ts keeps it by sequence. OK is sent only after commit.
import type { SaveOutcome } from '../../infra/store/event-store.js'
import { BYE_STATUS, KIND_ANNOUNCEMENT, KIND_DEPARTURE } from '../../protocols/agent-registry.js'
import type { CacheInvalidationOp, ConnControlOp, ControlChannel } from '../../protocols/control.js'
import { parseEventShape, type VerifiedEvent } from '../../protocols/nip01/event.js'
import { KIND_AUTH, kindClass } from '../../protocols/nip01/kinds.js'
import { channelTagOf, parseChannelAction } from '../../protocols/nip29.js'
import { isExpired } from '../../protocols/nip40.js'
import { type Reason, reason } from '../../protocols/reasons.js'
import { assertNever, type Result } from '../../protocols/result.js'
import { type ActorContext, pipeTo, tell, tellUntilTaken } from '../kernel/index.js'
import { applyChannelPlanLogged, type ChannelPlan, planChannelEvent, planChannelEventNow, type RelayEvent } from './community-channels.js'
import { disconnectAll, disconnectPubkey } from './community-cluster.js'
import { checkWrite, checkWriteNow } from './community-policy.js'
import { clearPresence, holdPresence, KIND_PRESENCE, recordPresence, unholdForBye, unholdPresence } from './community-presence.js'
import { LIVE_INTERRUPTED, loseAll, loseMatching, REMOTE_UNDELIVERED } from './community-reads.js'
import type { CommunityDeps, CommunityState } from './community-state.js'
import { lose } from './live-feed.js'
import { type CommunityMsg, type PublishOutcome, REDELIVER } from './messages.js'
import { tellRegistry } from './registry-tells.js'

type Ctx = ActorContext<CommunityMsg>
type Publish = Extract<CommunityMsg, { type: 'Publish' }>
type Saved = Extract<CommunityMsg, { type: 'Saved' }>

const DUPLICATE = reason('duplicate', 'already have this event')
const NOT_PROCESSED = reason('error', 'could not process the event')

const PIPE = REDELIVER
/** A write whose checks came back later than this is not stored: its writer's ask (30 s) ended before. */
const STALE_PREPARED_MS = 25_000

export function onPublish(state: CommunityState, msg: Publish, ctx: Ctx, deps: CommunityDeps): CommunityState {
  const { event, reply } = msg
  // NIP-42: AUTH events travel in AUTH messages only and are never stored or relayed.
  if (event.kind === KIND_AUTH) return refuse(state, reply, reason('invalid', 'kind 22242 is only accepted in AUTH messages'))
  if (isExpired(event, deps.nowSeconds())) return refuse(state, reply, reason('invalid', 'event has expired'))
  // a departure is the relay's word that an agent left: nobody else may say it (docs/agent-registry.md)
  if (event.kind === KIND_DEPARTURE && event.pubkey !== deps.cluster.relayPubkey)
    return refuse(state, reply, reason('restricted', `kind ${KIND_DEPARTURE} is published by the relay only`))
  const channel = channelTagOf(event)
  const order = state.writes.admit(msg, channel)
  if (order === 'held') return state
  if (order === 'full') return refuse(state, reply, reason('error', 'too many writes waiting in this community, retry shortly'))
  // before the inbound guard: a banned event may still be among the recent ids
  if (state.current.bannedEvents.has(event.id)) return refuse(state, reply, reason('blocked', 'this event was banned by a moderator'))
  // The inbound guard answers resends cheaply; the store stays authoritative for everything it forgot.
  if (state.recent.has(event.id)) {
    reply({ accepted: true, message: DUPLICATE })
    return state
  }
  // a channel change: later writes to this channel wait until it is applied (write-order.ts), from now on,
  // so a post right behind the 9000 that adds its author is decided on the rows the 9000 leaves
  const action = parseChannelAction(event)
  const ordered = action.ok && action.value && action.value.type !== 'post' ? action.value.channel : undefined
  if (ordered !== undefined) state.writes.begin(ordered, deps.nowMs())
  const now = prepareNow(state, msg, deps)
  const sinceMs = deps.nowMs()
  if (now !== undefined)
    return onPrepared(state, { type: 'Prepared', publish: msg, ordered, sinceMs, outcome: { ok: true, value: now } }, ctx, deps)
  pipeTo(ctx.self, prepare(state, msg, deps), (outcome): CommunityMsg => ({ type: 'Prepared', publish: msg, ordered, sinceMs, outcome }), {
    ...PIPE,
    onGiveUp: () => unanswered(state, msg, ordered, ctx, deps),
  })
  return state
}

/** The checks before the store from what the actor holds: undefined when one needs I/O (see prepare). */
function prepareNow(state: CommunityState, msg: Publish, deps: CommunityDeps): Result<ChannelPlan | undefined> | undefined {
  const { record } = state.current
  if (msg.conn) {
    const refused = checkWriteNow(record, msg.event, msg.conn, state.gate, deps.authRequired)
    if (refused === undefined) return undefined
    if (refused) return { ok: false, error: refused }
  }
  // a channel event is decided on the channel's rows, read fresh (community-channels.ts), or by its owner node
  return planChannelEventNow(msg.event, state.channels) ?? forwardPlan(msg.event, deps)
}

/** With the relay mesh, a channel change is the channel owner's to decide: this node only forwards it. */
function forwardPlan(event: VerifiedEvent, deps: CommunityDeps): Result<ChannelPlan> | undefined {
  if (!deps.mesh) return undefined
  const action = parseChannelAction(event)
  if (!action.ok || !action.value || action.value.type === 'post') return undefined
  return { ok: true, value: { action: action.value, verdict: { effect: 'none' }, forward: true } }
}

/** Beside the actor: the checks that read (membership, the channel's rows). */
async function prepare(state: CommunityState, msg: Publish, deps: CommunityDeps): Promise<Result<ChannelPlan | undefined>> {
  if (msg.conn) {
    const refused = await checkWrite(state.current.record, msg.event, msg.conn, state.gate, deps.authRequired)
    if (refused) return { ok: false, error: refused }
  }
  return forwardPlan(msg.event, deps) ?? planChannelEvent(msg.event, state.channels)
}

export function onPrepared(
  state: CommunityState,
  msg: Extract<CommunityMsg, { type: 'Prepared' }>,
  ctx: Ctx,
  deps: CommunityDeps,
): CommunityState {
  const { publish, ordered, outcome } = msg
  const { event, raw, reply } = publish
  // its writer's ask has timed out (the actor was down meanwhile): storing it now would contradict the
  // `error:` the writer heard; a re-send is decided afresh
  if (deps.nowMs() - msg.sinceMs > STALE_PREPARED_MS) {
    reply({ accepted: false, message: NOT_PROCESSED })
    if (ordered !== undefined) republish(state, state.writes.end(ordered), ctx, deps)
    return state
  }
  if (!outcome.ok || !outcome.value.ok) {
    if (!outcome.ok) deps.log.error({ err: outcome.error, community: deps.record.id, eventId: event.id }, 'write checks failed')
    reply({ accepted: false, message: outcome.ok ? (outcome.value as { error: Reason }).error : NOT_PROCESSED })
    if (ordered !== undefined) republish(state, state.writes.end(ordered), ctx, deps)
    // an outage of the stores behind the checks goes on to supervision, as it did when they were awaited here
    if (!outcome.ok) throw outcome.error
    return state
  }
  const plan = outcome.value.value
  if (kindClass(event.kind) === 'ephemeral') {
    if (event.kind !== KIND_PRESENCE) return deliverEphemeral(state, publish, deps)
    if (event.content === BYE_STATUS) return onBye(state, publish, ctx, deps)
    const hold = holdPresence(state.presenceHolds, state.conns, event, publish.conn)
    if (typeof hold === 'string') return refuse(state, reply, hold)
    pipeTo(
      ctx.self,
      recordPresence(hold, event, raw, deps.presence),
      (o): CommunityMsg => ({ type: 'PresenceSet', publish, hold, outcome: o }),
      {
        ...PIPE,
        onGiveUp: () => {
          unholdPresence(state.presenceHolds, hold)
          reply({ accepted: false, message: NOT_PROCESSED })
        },
      },
    )
    return state
  }
  if (plan?.forward && deps.mesh) {
    const moderated = deps.mesh.moderate(deps.record.id, plan.action.channel, event, raw)
    pipeTo(ctx.self, moderated, (o): CommunityMsg => ({ type: 'Moderated', publish, ordered, outcome: o }), {
      ...PIPE,
      onGiveUp: () => reply({ accepted: false, message: NOT_PROCESSED }),
    })
    return state
  }
  save(state, { type: 'Saved', event, raw, outcome: { status: 'error' }, plan, ordered, reply }, ctx, deps)
  return state
}

/** The owner node's answer to a forwarded channel change; its events reach this node through the bus. */
export function onModerated(
  state: CommunityState,
  msg: Extract<CommunityMsg, { type: 'Moderated' }>,
  ctx: Ctx,
  deps: CommunityDeps,
): CommunityState {
  const { publish, ordered, outcome } = msg
  if (!outcome.ok)
    deps.log.warn({ err: outcome.error, community: deps.record.id, eventId: publish.event.id }, 'channel owner did not answer')
  publish.reply(outcome.ok ? outcome.value : { accepted: false, message: NOT_PROCESSED })
  if (outcome.ok && outcome.value.accepted) state.recent.add(publish.event.id)
  if (ordered !== undefined) republish(state, state.writes.end(ordered), ctx, deps)
  return state
}

export function onPresenceSet(
  state: CommunityState,
  msg: Extract<CommunityMsg, { type: 'PresenceSet' }>,
  deps: CommunityDeps,
): CommunityState {
  if (msg.outcome.ok) {
    tellRegistry(deps, { type: 'Heartbeat', pubkey: msg.publish.event.pubkey })
    return deliverEphemeral(state, msg.publish, deps)
  }
  deps.log.error({ err: msg.outcome.error, community: deps.record.id }, 'presence store failed')
  unholdPresence(state.presenceHolds, msg.hold)
  return refuse(state, msg.publish.reply, reason('error', 'could not record presence'))
}

/** The agent client's goodbye: its presence is cleared beside the actor, then it is answered (ByeDone). */
function onBye(state: CommunityState, publish: Publish, ctx: Ctx, deps: CommunityDeps): CommunityState {
  const { event, reply } = publish
  const held = unholdForBye(state.presenceHolds, state.conns, event, publish.conn)
  if (typeof held === 'string') return refuse(state, reply, held)
  tellRegistry(deps, { type: 'Goodbye', pubkey: event.pubkey })
  pipeTo(ctx.self, clearPresence(held, event.pubkey, deps.presence), (o): CommunityMsg => ({ type: 'ByeDone', publish, outcome: o }), {
    ...PIPE,
    onGiveUp: () => {
      reply({ accepted: false, message: NOT_PROCESSED })
      tellRegistry(deps, { type: 'GoodbyeDone', pubkey: event.pubkey, cleared: false })
    },
  })
  return state
}

/** The presence is gone: the goodbye is relayed as any heartbeat, answered, and an agent's departure sent. */
export function onByeDone(state: CommunityState, msg: Extract<CommunityMsg, { type: 'ByeDone' }>, deps: CommunityDeps): CommunityState {
  const { publish } = msg
  tellRegistry(deps, { type: 'GoodbyeDone', pubkey: publish.event.pubkey, cleared: msg.outcome.ok })
  if (!msg.outcome.ok) {
    deps.log.error({ err: msg.outcome.error, community: deps.record.id }, 'presence store failed')
    return refuse(state, publish.reply, reason('error', 'could not record presence'))
  }
  deps.metrics.agentByes.inc()
  deliverEphemeral(state, publish, deps)
  return state
}

function deliverEphemeral(state: CommunityState, publish: Publish, deps: CommunityDeps): CommunityState {
  state.feed.offer(publish.event, publish.raw)
  deps.cluster.link.publishEvent(publish.raw)
  publish.reply({ accepted: true, message: '' })
  return state
}

/** Starts the store write; its outcome comes back as a Saved message (Akka's pipeTo). */
function save(state: CommunityState, template: Saved, ctx: Ctx, deps: CommunityDeps): void {
  const { event, raw, plan, ordered } = template
  const end = deps.metrics.storeLatency.startTimer({ op: 'save' })
  // counted until its effect is handled (the Saved, or the LateCommit that stands for it)
  state.inflight.effects++
  deps.store.save(deps.record.id, event, raw).then(
    (outcome) => {
      end()
      if (tell(ctx.self, { ...template, outcome })) return
      // stored, but this actor can't take the result now (down, or its mailbox full): the client hears the
      // truth at once, and the rest (fan-out, the channel change, the write order) follows when it can
      template.reply(outcome.status === 'saved' ? { accepted: true, message: '' } : { accepted: true, message: DUPLICATE })
      deliverLater(state, { type: 'LateCommit', event, raw, outcome, plan, ordered, counted: true }, ctx, deps)
    },
    (error: unknown) => {
      end()
      deps.log.error({ err: error, community: deps.record.id, eventId: event.id }, 'store save failed')
      const late = (error as { late?: Promise<SaveOutcome> }).late
      if (tell(ctx.self, { ...template, outcome: { status: 'error', late } })) return
      template.reply({ accepted: false, message: reason('error', 'could not store the event') })
      if (ordered !== undefined) deliverLater(state, { type: 'WriteDone', channel: ordered }, ctx, deps)
      // the count passes to the late outcome, if one may come
      if (!late) effectDone(state)
      late?.then(
        (o) => deliverLater(state, { type: 'LateCommit', event, raw, outcome: o, plan, counted: true }, ctx, deps),
        () => effectDone(state),
      )
    },
  )
}

/** A store this actor started took effect (or never will): community-reads.ts stops expecting its live copy. */
export const effectDone = (state: Pick<CommunityState, 'inflight'>) => {
  state.inflight.effects = Math.max(0, state.inflight.effects - 1)
}

/**
 * Results of the community's own I/O that it could not take when they came (down, or its mailbox full)
 * are offered again until it takes them. If it never does, the event's local subscriptions are closed with
 * `error:` (counted) and the other nodes still get it — never a silent gap (DESIGN §5).
 */
function deliverLater(
  state: CommunityState,
  msg: Extract<CommunityMsg, { type: 'LateCommit' | 'WriteDone' | 'Applied' }>,
  ctx: Ctx,
  deps: CommunityDeps,
): void {
  tellUntilTaken(ctx.self, msg, { ...PIPE, onGiveUp: () => lostCommit(state, msg, deps) })
}

function lostCommit(
  state: Pick<CommunityState, 'index' | 'inflight'>,
  msg: Extract<CommunityMsg, { type: 'LateCommit' | 'WriteDone' | 'Applied' }>,
  deps: CommunityDeps,
) {
  if (msg.type === 'WriteDone') return
  if ((msg.type === 'LateCommit' && msg.counted) || (msg.type === 'Applied' && msg.piped)) effectDone(state)
  if (msg.type === 'LateCommit' && msg.outcome.status !== 'saved') return
  deps.log.error({ community: deps.record.id, eventId: msg.event.id }, 'a stored event could not reach its community')
  const events = [{ event: msg.event, raw: msg.raw }, ...(msg.type === 'Applied' ? msg.changes : [])]
  for (const e of events) {
    deps.cluster.link.publishEvent(e.raw)
    deps.lagged(loseMatching(state.index, e.event, reason('error', 'an event could not be delivered here; subscribe again to catch up')))
  }
}

/** Relay-signed channel state that never reached its community: delivered to the other nodes, closed here. */
export function lostAnnounce(state: Pick<CommunityState, 'index' | 'inflight'>, msg: CommunityMsg, deps: CommunityDeps): void {
  if (msg.type !== 'Announce') return
  if (msg.from === 'channel-state') effectDone(state)
  for (const e of msg.events) {
    deps.cluster.link.publishEvent(e.raw)
    deps.lagged(loseMatching(state.index, e.event, reason('error', 'an event could not be delivered here; subscribe again to catch up')))
  }
}

/** Checks that ran beside the actor never came back to it: the writer hears `error:`, the channel goes on. */
function unanswered(state: CommunityState, msg: Publish, ordered: string | undefined, ctx: Ctx, deps: CommunityDeps) {
  msg.reply({ accepted: false, message: NOT_PROCESSED })
  if (ordered !== undefined) deliverLater(state, { type: 'WriteDone', channel: ordered }, ctx, deps)
}

function refuse(state: CommunityState, reply: (o: PublishOutcome) => void, message: PublishOutcome['message']) {
  reply({ accepted: false, message } as PublishOutcome)
  return state
}

export function onSaved(state: CommunityState, msg: Saved, ctx: Ctx, deps: CommunityDeps): CommunityState {
  const { event, raw, outcome, reply, ordered } = msg
  effectDone(state)
  // a stored event ends its place in the write order when it has taken effect (onApplied), not here
  let handedOn = false
  try {
    switch (outcome.status) {
      case 'saved':
        handedOn = true
        applyThen(state, { event, raw, removedIds: outcome.removedIds, plan: msg.plan, ordered, reply }, ctx, deps)
        return state
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
        if (outcome.late) {
          state.inflight.effects++
          outcome.late.then(
            (late) => deliverLater(state, { type: 'LateCommit', event, raw, outcome: late, plan: msg.plan, counted: true }, ctx, deps),
            () => effectDone(state),
          )
        }
        return refuse(state, reply, reason('error', 'could not store the event'))
      default:
        return assertNever(outcome)
    }
  } finally {
    if (ordered !== undefined && !handedOn) republish(state, state.writes.end(ordered), ctx, deps)
  }
}

type Stored = Omit<Extract<CommunityMsg, { type: 'Applied' }>, 'type' | 'changes'> & { plan?: ChannelPlan }

/**
 * A stored event takes effect: a channel change is applied first, beside the actor (its Applied comes
 * back), then the event is delivered and answered (onApplied).
 */
function applyThen(state: CommunityState, stored: Stored, ctx: Ctx, deps: CommunityDeps): void {
  const { plan, ...rest } = stored
  if (plan?.verdict.effect !== 'apply' || plan.action.type === 'post') {
    onApplied(state, { type: 'Applied', ...rest, changes: [] }, ctx, deps)
    return
  }
  const applied = applyChannelPlanLogged(plan, stored.event, state.channels)
  state.inflight.effects++
  pipeTo(ctx.self, applied, (o): CommunityMsg => ({ type: 'Applied', ...rest, changes: o.ok ? o.value : [], piped: true }), {
    ...PIPE,
    onGiveUp: (m) => {
      rest.reply?.({ accepted: true, message: '' })
      lostCommit(state, m as Extract<CommunityMsg, { type: 'Applied' }>, deps)
    },
  })
}

/** The event (and its channel change) took effect: deliver it, and the relay's own events, then answer. */
export function onApplied(
  state: CommunityState,
  msg: Extract<CommunityMsg, { type: 'Applied' }>,
  ctx: Ctx,
  deps: CommunityDeps,
): CommunityState {
  const { event, raw, removedIds, changes, ordered, reply } = msg
  if (msg.piped) effectDone(state)
  for (const id of removedIds) state.recent.delete(id)
  state.recent.add(event.id)
  state.accepted++
  state.feed.offer(event, raw)
  deps.cluster.link.publishEvent(raw)
  announce(state, changes, deps)
  if (event.kind === KIND_ANNOUNCEMENT) tellRegistry(deps, { type: 'Announced', pubkey: event.pubkey })
  reply?.({ accepted: true, message: '' })
  if (ordered !== undefined) republish(state, state.writes.end(ordered), ctx, deps)
  return state
}

/**
 * A commit whose result the actor did not take when it came (a commit that outlived its deadline, or one
 * that landed while the actor was down): make the node consistent with the store now.
 */
export function onLateCommit(
  state: CommunityState,
  msg: Extract<CommunityMsg, { type: 'LateCommit' }>,
  ctx: Ctx,
  deps: CommunityDeps,
): CommunityState {
  const { event, raw, outcome, plan, ordered } = msg
  if (msg.counted) effectDone(state)
  deps.log.warn({ community: deps.record.id, eventId: event.id, status: outcome.status }, 'a commit takes effect late')
  if (outcome.status === 'saved') {
    applyThen(state, { event, raw, removedIds: outcome.removedIds, plan, ordered }, ctx, deps)
    return state
  }
  if (outcome.status === 'duplicate') state.recent.add(event.id)
  if (ordered !== undefined) republish(state, state.writes.end(ordered), ctx, deps)
  return state
}

/**
 * Writes that waited their turn, decided now in arrival order (each may wait again behind a new change).
 * One that fails is answered `error:` and the rest still go on: none is left without an answer.
 */
export function republish(state: CommunityState, waiting: Publish[], ctx: Ctx, deps: CommunityDeps): void {
  for (const m of waiting) {
    try {
      onPublish(state, m, ctx, deps)
    } catch (error) {
      deps.log.error({ err: error, community: deps.record.id, eventId: m.event.id }, 'a write that waited its turn failed')
      m.reply({ accepted: false, message: NOT_PROCESSED })
    }
  }
}

/** A channel change that failed with its result undeliverable: later writes to the channel may go on. */
export function onWriteDone(state: CommunityState, channel: string, ctx: Ctx, deps: CommunityDeps): CommunityState {
  republish(state, state.writes.end(channel), ctx, deps)
  return state
}

/** The relay's own channel events: delivered here and to the other nodes like any accepted event. */
export function announce(state: CommunityState, events: RelayEvent[], deps: CommunityDeps): void {
  for (const c of events) {
    state.feed.offer(c.event, c.raw)
    deps.cluster.link.publishEvent(c.raw)
  }
}

/** What onDropped gets from the actor: the parts that outlive its state. */
export interface Survivors {
  index: CommunityState['index']
  conns: CommunityState['conns']
  presenceHolds: CommunityState['presenceHolds']
  writes: CommunityState['writes']
  inflight: CommunityState['inflight']
}

/**
 * The community gave up with `msg` still queued (the kernel's onDropped, before the asks in it fail). Nothing
 * may vanish: what can be answered now is (a stored event is OK true), the results of its own I/O are offered
 * again for after the respawn, a REQ that never ran is closed, a remote event's subscriptions are closed.
 */
export function dropped(msg: CommunityMsg, self: Ctx['self'], s: Survivors, deps: CommunityDeps): void {
  const again = (m: CommunityMsg, onGiveUp: () => void = () => {}) => tellUntilTaken(self, m, { ...PIPE, onGiveUp })
  const unavailable = reason('error', 'this community is unavailable; subscribe again shortly')
  switch (msg.type) {
    case 'Saved': {
      const o = msg.outcome
      msg.reply(
        o.status === 'saved'
          ? { accepted: true, message: '' }
          : o.status === 'duplicate'
            ? { accepted: true, message: DUPLICATE }
            : { accepted: false, message: reason('error', 'could not store the event') },
      )
      // handled after the respawn: fan-out, the channel change, the write order (its second reply is ignored)
      again(msg, () => {
        if (o.status === 'saved') lostCommit(s, { type: 'LateCommit', event: msg.event, raw: msg.raw, outcome: o, counted: true }, deps)
        else effectDone(s)
      })
      return
    }
    case 'Applied':
      msg.reply?.({ accepted: true, message: '' })
      again(msg, () => lostCommit(s, msg, deps))
      return
    case 'Prepared':
      // not stored: its writer hears so now, and the channel it held goes on after the respawn
      msg.publish.reply({ accepted: false, message: NOT_PROCESSED })
      if (msg.ordered !== undefined) again({ type: 'WriteDone', channel: msg.ordered })
      return
    case 'Moderated':
      // the owner node decided it: its writer hears the answer now
      msg.publish.reply(msg.outcome.ok ? msg.outcome.value : { accepted: false, message: NOT_PROCESSED })
      if (msg.ordered !== undefined) again({ type: 'WriteDone', channel: msg.ordered })
      return
    case 'MeshApplied':
      again(msg, () => {
        for (const e of msg.events) {
          deps.cluster.link.publishEvent(e.raw)
          deps.lagged(loseMatching(s.index, e.event, reason('error', 'an event could not be delivered here; subscribe again to catch up')))
        }
      })
      return
    case 'PresenceSet':
      if (!msg.outcome.ok) unholdPresence(s.presenceHolds, msg.hold)
      msg.publish.reply(
        msg.outcome.ok ? { accepted: true, message: '' } : { accepted: false, message: reason('error', 'could not record presence') },
      )
      return
    case 'LateCommit':
    case 'WriteDone':
      again(msg, () => lostCommit(s, msg, deps))
      return
    case 'Announce':
      again(msg, () => lostAnnounce(s, msg, deps))
      return
    case 'PageRead':
      again(msg, () => lose(s.index, [msg.sub], unavailable))
      return
    case 'Subscribe':
      // the connection believes it subscribed: it hears it is not
      msg.conn.lose(msg.subId, unavailable)
      return
    case 'RemoteEvent': {
      const event = parseEventShape(msg.raw)
      if (event) deps.lagged(loseMatching(s.index, event, REMOTE_UNDELIVERED))
      return
    }
    case 'LiveInterrupted':
      deps.lagged(loseAll(s.index, LIVE_INTERRUPTED))
      return
    case 'DisconnectPubkey':
    case 'DisconnectCommunity':
      disconnectHere(s.conns, msg, deps)
      return
    case 'ByeDone':
      // the presence is cleared (or not): its writer hears so now; the relay and the departure follow the respawn
      msg.publish.reply(
        msg.outcome.ok ? { accepted: true, message: '' } : { accepted: false, message: reason('error', 'could not record presence') },
      )
      // never taken: the registry leaves the agent to its sweep again
      again(msg, () => tellRegistry(deps, { type: 'GoodbyeDone', pubkey: msg.publish.event.pubkey, cleared: false }))
      return
    case 'ControlAccepted':
    case 'PublishChannelState':
    case 'BannedEventsLoaded':
    case 'BannedEventsFailed':
    case 'ReadFailed':
      again(msg)
      return
    default:
      // asks (Publish, Count, Stats) fail with ActorDownError next; Join/Disconnect/Unsubscribe/Sweep/Control
      // are covered by the next request's registration, the sweep, the connection's own set, the TTLs
      return
  }
}

/**
 * Best effort: a lost conn-control broadcast is covered by the ban row checked at AUTH and at every write, a
 * lost cache invalidation by the caches' TTL (DESIGN §5).
 */
export async function broadcastLogged(
  deps: Pick<CommunityDeps, 'cluster' | 'log' | 'record'>,
  channel: ControlChannel,
  op: ConnControlOp | CacheInvalidationOp,
): Promise<void> {
  await deps.cluster.link.broadcast(channel, op).catch((error: unknown) => {
    deps.log.warn({ err: error, community: deps.record.id }, `${channel} broadcast failed`)
  })
}

/** Close this node's sockets of a pubkey (a ban) or of the community; `broadcast` asks the other nodes too. */
export function disconnectHere(
  conns: CommunityState['conns'],
  msg: Extract<CommunityMsg, { type: 'DisconnectPubkey' | 'DisconnectCommunity' }>,
  deps: Pick<CommunityDeps, 'cluster' | 'log' | 'record'>,
): void {
  if (msg.type === 'DisconnectPubkey') {
    disconnectPubkey(conns, msg.pubkey, msg.reason)
    if (msg.broadcast)
      void broadcastLogged(deps, 'conn-control', { op: 'DisconnectPubkey', pubkey: msg.pubkey, eventId: '', reason: msg.reason })
    return
  }
  disconnectAll(conns, msg.reason)
  // done: this node's sockets are told, and the other nodes asked to tell theirs
  if (msg.broadcast) void broadcastLogged(deps, 'conn-control', { op: 'DisconnectCommunity', reason: msg.reason }).then(() => msg.done?.())
  else msg.done?.()
}
