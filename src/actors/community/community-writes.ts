// What a community actor does with a write until the store has it. No step awaits (docs/architecture.md
// §5): the checks that need no I/O run in the handler; those that do (the write policy's membership, the
// NIP-29 plan's fresh rows) run beside the actor and come back as Prepared; the store call comes back as
// Saved (write-commit.ts takes it from there). Many writes are in flight at once; where order matters (a
// channel change and the writes to that channel behind it) write-order.ts keeps it by sequence (§7).
import type { SaveOutcome } from '../../infra/store/event-store.js'
import { isDispatchRequest } from '../../protocols/jobs.js'
import { HOST_WRITE } from '../../protocols/mesh/session-frames.js'
import type { VerifiedEvent } from '../../protocols/nip01/event.js'
import { kindClass } from '../../protocols/nip01/kinds.js'
import { channelTagOf, parseChannelAction } from '../../protocols/nip29.js'
import { isMembershipRequest } from '../../protocols/nip43.js'
import { type Reason, reason } from '../../protocols/reasons.js'
import type { Result } from '../../protocols/result.js'
import { pipeTo, tell } from '../kernel/index.js'
import { type ChannelPlan, planChannelEvent, planChannelEventNow } from './community-channels.js'
import { checkEventRules, checkWrite, checkWriteNow } from './community-policy.js'
import type { CommunityDeps, CommunityState, Ctx } from './community-state.js'
import { onMembershipRequest } from './membership-requests.js'
import { type CommunityMsg, type PublishMsg, REDELIVER, type SavedMsg } from './messages.js'
import { writeEphemeral } from './presence-writes.js'
import { DUPLICATE, NOT_PROCESSED, NOT_STORED, refuse, storedAnswer } from './write-answers.js'
import { command } from './write-commands.js'
import { deliverLater, effectDone } from './write-effects.js'

const NO_DISPATCH = reason('unsupported', 'this relay does not dispatch jobs here yet')

/** A write whose checks came back later than this is not stored: its writer's ask (30 s) ended before. */
const STALE_PREPARED_MS = 25_000

export function onPublish(state: CommunityState, msg: PublishMsg, ctx: Ctx, deps: CommunityDeps): CommunityState {
  const { event, reply } = msg
  const broken = checkEventRules(event, deps.communityPubkey, deps.nowSeconds())
  if (broken) return refuse(state, reply, broken)
  // NIP-43 joins and leaves are the relay's to decide: never stored, relayed, or held behind a channel
  if (isMembershipRequest(event.kind)) return onMembershipRequest(state, msg, ctx, deps)
  const order = state.writes.admit(msg, channelTagOf(event))
  if (order === 'held') return state
  if (order === 'full') return refuse(state, reply, reason('error', 'too many writes waiting in this community, retry shortly'))
  // before the inbound guard: a banned event may still be among the recent ids
  if (state.current.bannedEvents.has(event.id)) return refuse(state, reply, reason('blocked', 'this event was banned by a moderator'))
  // The inbound guard answers resends cheaply; the store stays authoritative for everything it forgot.
  if (state.recent.has(event.id)) {
    reply({ accepted: true, message: DUPLICATE })
    return state
  }
  const notQueued = deps.jobs?.refuseRequest(event) ?? (isDispatchRequest(event) && !deps.jobs ? NO_DISPATCH : undefined)
  if (notQueued) return refuse(state, reply, notQueued)
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
    ...REDELIVER,
    onGiveUp: () => unanswered(state, msg, ordered, ctx, deps),
  })
  return state
}

/** The checks before the store from what the actor holds: undefined when one needs I/O (see prepare). */
function prepareNow(state: CommunityState, msg: PublishMsg, deps: CommunityDeps): Result<ChannelPlan | undefined> | undefined {
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
async function prepare(state: CommunityState, msg: PublishMsg, deps: CommunityDeps): Promise<Result<ChannelPlan | undefined>> {
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
  const stale = deps.nowMs() - msg.sinceMs > STALE_PREPARED_MS
  if (stale || !outcome.ok || !outcome.value.ok) {
    if (!stale && !outcome.ok) deps.log.error({ err: outcome.error, community: deps.record.id, eventId: event.id }, 'write checks failed')
    reply({ accepted: false, message: !stale && outcome.ok ? (outcome.value as { error: Reason }).error : NOT_PROCESSED })
    if (ordered !== undefined) release(state, ordered, ctx, deps)
    // an outage of the stores behind the checks goes on to supervision, as it did when they were awaited here
    if (!stale && !outcome.ok) throw outcome.error
    return state
  }
  const plan = outcome.value.value
  if (kindClass(event.kind) === 'ephemeral') return writeEphemeral(state, publish, ctx, deps)
  if (plan?.forward && deps.mesh) {
    // the owner judges the write again on this client's AUTH (actors/mesh/forwarded-write.ts)
    const auth = publish.conn ? { pubkeys: [...publish.conn.authed], owners: [...publish.conn.owners] } : HOST_WRITE
    const moderated = deps.mesh.moderate(deps.record.id, plan.action.channel, event, raw, auth)
    pipeTo(ctx.self, moderated, (o): CommunityMsg => ({ type: 'Moderated', publish, ordered, outcome: o }), {
      ...REDELIVER,
      onGiveUp: () => reply({ accepted: false, message: NOT_PROCESSED }),
    })
    return state
  }
  if (plan?.verdict.effect === 'command') {
    command(state, publish, plan, ordered, ctx, deps)
    return state
  }
  const job = deps.jobs?.writeOf(event)
  save(state, { type: 'Saved', event, raw, outcome: { status: 'error' }, plan, ordered, reply, from: publish.conn?.id, job }, ctx, deps)
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
  if (ordered !== undefined) release(state, ordered, ctx, deps)
  return state
}

/** Starts the store write; its outcome comes back as a Saved message (Akka's pipeTo). */
function save(state: CommunityState, template: SavedMsg & { reply: NonNullable<SavedMsg['reply']> }, ctx: Ctx, deps: CommunityDeps): void {
  const { event, raw, ordered, reply } = template
  const end = deps.metrics.storeLatency.startTimer({ op: 'save' })
  // counted until its effect is handled (the Saved, or the later Saved that stands for it)
  state.inflight.effects++
  deps.store.save(deps.record.id, event, raw, template.job).then(
    (outcome) => {
      end()
      if (tell(ctx.self, { ...template, outcome })) return
      // stored, but this actor can't take the result now (down, or its mailbox full): the client hears the
      // truth at once, and the rest (fan-out, the channel change, the write order) follows when it can
      reply(outcome.status === 'saved' ? storedAnswer(template.plan) : { accepted: true, message: DUPLICATE })
      deliverLater(state, { ...template, outcome, reply: undefined }, ctx, deps)
    },
    (error: unknown) => {
      end()
      deps.log.error({ err: error, community: deps.record.id, eventId: event.id }, 'store save failed')
      const late = (error as { late?: Promise<SaveOutcome> }).late
      if (tell(ctx.self, { ...template, outcome: { status: 'error', late } })) return
      reply({ accepted: false, message: NOT_STORED })
      if (ordered !== undefined) deliverLater(state, { type: 'WriteDone', channel: ordered }, ctx, deps)
      // the count passes to the late outcome, if one may come
      if (!late) effectDone(state)
      late?.then(
        (o) => deliverLater(state, { ...template, outcome: o, ordered: undefined, reply: undefined }, ctx, deps),
        () => effectDone(state),
      )
    },
  )
}

/** Checks that ran beside the actor never came back to it: the writer hears `error:`, the channel goes on. */
function unanswered(state: CommunityState, msg: PublishMsg, ordered: string | undefined, ctx: Ctx, deps: CommunityDeps) {
  msg.reply({ accepted: false, message: NOT_PROCESSED })
  if (ordered !== undefined) deliverLater(state, { type: 'WriteDone', channel: ordered }, ctx, deps)
}

/** A channel change was applied (or failed): the writes that waited for it are decided now, in arrival order. */
export function release(state: CommunityState, channel: string, ctx: Ctx, deps: CommunityDeps): void {
  republish(state, state.writes.end(channel), ctx, deps)
}

/**
 * Writes that waited their turn, decided now in arrival order (each may wait again behind a new change).
 * One that fails is answered `error:` and the rest still go on: none is left without an answer.
 */
export function republish(state: CommunityState, waiting: PublishMsg[], ctx: Ctx, deps: CommunityDeps): void {
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
export function onWriteDone(
  state: CommunityState,
  msg: Extract<CommunityMsg, { type: 'WriteDone' }>,
  ctx: Ctx,
  deps: CommunityDeps,
): CommunityState {
  release(state, msg.channel, ctx, deps)
  return state
}

/** The handler crashed: the writes held hear now, not at their ask's timeout (a crash may be the first of a give-up). */
export function answerHeldWrites(state: CommunityState): void {
  for (const held of state.writes.drain()) {
    try {
      held.reply({ accepted: false, message: NOT_PROCESSED })
    } catch {
      // a reply callback that throws must not keep the others from theirs
    }
  }
}
