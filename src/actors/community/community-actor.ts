// State: the live-subscription index, presence holds per connection, the recent-id guard and counters, the
// current record (settings, roster, kind rules) with the banned event ids, and the access gate's caches.
// Messages: CommunityMsg (publish, subscribe, count, disconnect, control, record changes, stats) and Saved.
// Crash policy: permanent with backoff. The index is created once per activation and survives a restart:
// its connections still believe they are subscribed, and events are never silently skipped for them (the
// presence holds survive likewise, so a restart can't leak a connection count).

import type { Logger } from '../../infra/log.js'
import type { Metrics } from '../../infra/metrics.js'
import type { ChannelStore } from '../../infra/store/channel-store.js'
import type { CommunityRecord, CommunityStore } from '../../infra/store/community-store.js'
import type { EventStore } from '../../infra/store/event-store.js'
import type { CacheInvalidationOp, ConnControlOp } from '../../protocols/control.js'
import type { Limits } from '../../protocols/limits.js'
import type { NostrEvent } from '../../protocols/nip01/event.js'
import { KIND_AUTH, kindClass } from '../../protocols/nip01/kinds.js'
import type { EventTemplate } from '../../protocols/nip29.js'
import { isExpired } from '../../protocols/nip40.js'
import { reason } from '../../protocols/reasons.js'
import { assertNever } from '../../protocols/result.js'
import { type ActorContext, type ActorDef, type TypedRef, tell } from '../kernel/index.js'
import { AccessGate } from './access-gate.js'
import { applyChannelPlanLogged, type ChannelDeps, DeferredState, planChannelEvent, publishState, type RelayEvent } from './community-channels.js'
import { acceptControl, acceptRemoteEvent, type ClusterDeps, disconnectAll, disconnectPubkey, toLocalMessage } from './community-cluster.js'
import { checkWrite } from './community-policy.js'
import { KIND_PRESENCE, type PresenceDeps, type PresenceHolds, releasePresence, setPresence } from './community-presence.js'
import { fanOut, onCount, onSubscribe } from './community-reads.js'
import type { CommunityMsg, PublishOutcome } from './messages.js'
import { RecentIds } from './recent-ids.js'
import { type ConnectionRegistry, SubscriptionIndex } from './subscription-index.js'

export interface CommunityDeps {
  record: CommunityRecord
  store: EventStore
  channels: ChannelStore
  communities: Pick<CommunityStore, 'allowedAmong' | 'listBannedEvents'>
  /** sign with the relay key (channel state events 39000–39002, the relay's answers to joins and leaves) */
  sign: (t: EventTemplate, createdAt: number) => NostrEvent
  /** the relay-wide AUTH requirement (each community may add its own) */
  authRequired: boolean
  /** how long a membership answer is reused: what bounds a lost invalidation broadcast */
  accessCacheTtlMs: number
  limits: Limits
  nowSeconds: () => number
  nowMs: () => number
  metrics: Metrics
  log: Logger
  cluster: ClusterDeps
  presence: PresenceDeps
}

interface CommunityState {
  index: SubscriptionIndex
  conns: ConnectionRegistry
  presenceHolds: PresenceHolds
  recent: RecentIds
  accepted: number
  /** the current record: replaced on RecordChanged, read by the access gate */
  current: { record: CommunityRecord; bannedEvents: Set<string> }
  gate: AccessGate
  channels: ChannelDeps
}

type Ctx = ActorContext<CommunityMsg>

export const communityPath = (id: string) => `community/${id}`

export function communityActor(deps: CommunityDeps): ActorDef<CommunityState, CommunityMsg> {
  const index = new SubscriptionIndex()
  const conns: ConnectionRegistry = new Map()
  const presenceHolds: PresenceHolds = new Map()
  const current = { record: deps.record, bannedEvents: new Set<string>() }
  const id = deps.record.id
  const gate = new AccessGate({
    community: id,
    channels: deps.channels,
    record: () => current.record,
    allowedAmong: (pubkeys) => deps.communities.allowedAmong(id, pubkeys),
    ttlMs: deps.accessCacheTtlMs,
    nowMs: deps.nowMs,
  })
  const channels: ChannelDeps = {
    community: id,
    channels: deps.channels,
    events: deps.store,
    relayPubkey: deps.cluster.relayPubkey,
    isModerator: (pubkey) => pubkey === deps.cluster.relayPubkey || current.record.admins.includes(pubkey),
    sign: deps.sign,
    defer: (channel, what) => deferred.add(channel, what),
    invalidate: async (op) => {
      gate.invalidate(op)
      await deps.cluster.link.broadcast('cache-invalidation', op).catch((error: unknown) => {
        deps.log.warn({ err: error, community: id }, 'cache-invalidation broadcast failed')
      })
    },
    nowSeconds: deps.nowSeconds,
    log: deps.log,
  }
  let self: TypedRef<CommunityMsg> | undefined
  const deferred = new DeferredState((channel, what) => self !== undefined && tell(self, { type: 'PublishChannelState', channel, what }))
  void loadBannedEvents(current, deps)
  return {
    kind: 'community',
    init: () => ({ index, conns, presenceHolds, recent: new RecentIds(10_000), accepted: 0, current, gate, channels }),
    handle: async (state, msg, ctx) => {
      self ??= ctx.self
      const next = await handle(state, msg, ctx, deps)
      // the events channel is watched only while someone here is subscribed (DESIGN §5)
      deps.cluster.link.setInterest(state.index.size > 0)
      return next
    },
    afterStop: () => {
      deferred.stop()
      deps.cluster.link.close()
    },
    mailboxCapacity: 100_000,
    policy: { mode: 'permanent' },
  }
}

async function handle(state: CommunityState, msg: CommunityMsg, ctx: Ctx, deps: CommunityDeps): Promise<CommunityState> {
  switch (msg.type) {
    case 'Publish':
      return onPublish(state, msg, ctx, deps)
    case 'Saved':
      return onSaved(state, msg, deps)
    case 'Subscribe':
      return onSubscribe(state, msg, deps)
    case 'Unsubscribe':
      state.index.remove(msg.connId, msg.subId)
      return state
    case 'Join':
      state.conns.set(msg.conn.id, msg.conn)
      return state
    case 'Count':
      return onCount(state, msg, deps)
    case 'Disconnect':
      state.index.removeConnection(msg.connId)
      state.conns.delete(msg.connId)
      await releasePresence(state.presenceHolds, msg.connId, deps.presence)
      return state
    case 'RemoteEvent': {
      const e = await acceptRemoteEvent(msg.raw, deps.cluster)
      if (e) await fanOut(state, e, msg.raw, deps)
      return state
    }
    case 'Control': {
      const op = await acceptControl(msg, deps.record.id, deps.cluster)
      if (!op) return state
      // an archive, a new community or a roster change on another node: re-read the community list now
      // rather than at the next revalidation
      if (op.op === 'DisconnectCommunity' || op.op === 'InvalidateAll') deps.cluster.revalidate()
      if (op.op === 'DisconnectPubkey' || op.op === 'DisconnectCommunity') return handle(state, toLocalMessage(op), ctx, deps)
      state.gate.invalidate(op as CacheInvalidationOp)
      return state
    }
    case 'PublishChannelState': {
      const out: RelayEvent[] = []
      await publishState(state.channels, msg.channel, out, msg.what).catch((error: unknown) =>
        deps.log.error({ err: error, community: deps.record.id, channel: msg.channel }, 'channel state not published'),
      )
      await announce(state, out, deps)
      return state
    }
    case 'RecordChanged':
      state.current.record = msg.record
      // roster, admins or the allowed list may have changed: community membership answers are re-read
      state.gate.invalidate({ op: 'InvalidateMembers' })
      await loadBannedEvents(state.current, deps, state.recent)
      return state
    case 'DisconnectPubkey':
      disconnectPubkey(state.conns, msg.pubkey, msg.reason)
      if (msg.broadcast) await broadcast(deps, { op: 'DisconnectPubkey', pubkey: msg.pubkey, eventId: '', reason: msg.reason })
      return state
    case 'DisconnectCommunity':
      disconnectAll(state.conns, msg.reason)
      if (msg.broadcast) await broadcast(deps, { op: 'DisconnectCommunity', reason: msg.reason })
      msg.done?.()
      return state
    case 'Stats':
      msg.reply({ id: deps.record.id, subscriptions: state.index.size, connections: state.conns.size, eventsAccepted: state.accepted })
      return state
    default:
      return assertNever(msg)
  }
}

async function onPublish(state: CommunityState, msg: Extract<CommunityMsg, { type: 'Publish' }>, ctx: Ctx, deps: CommunityDeps) {
  const { event, raw, reply } = msg
  // NIP-42: AUTH events travel in AUTH messages only and are never stored or relayed.
  if (event.kind === KIND_AUTH) return refuse(state, reply, reason('invalid', 'kind 22242 is only accepted in AUTH messages'))
  if (isExpired(event, deps.nowSeconds())) return refuse(state, reply, reason('invalid', 'event has expired'))
  const { record, bannedEvents } = state.current
  // before the inbound guard: a banned event may still be among the recent ids
  if (bannedEvents.has(event.id)) return refuse(state, reply, reason('blocked', 'this event was banned by a moderator'))
  // The inbound guard answers resends cheaply; the store stays authoritative for everything it forgot.
  if (state.recent.has(event.id)) {
    reply({ accepted: true, message: reason('duplicate', 'already have this event') })
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
  const end = deps.metrics.storeLatency.startTimer({ op: 'save' })
  deps.store.save(deps.record.id, event, raw).then(
    (outcome) => {
      end()
      if (!tell(ctx.self, { type: 'Saved', event, raw, outcome, plan, reply })) reply(savedButUnannounced())
    },
    (error: unknown) => {
      end()
      deps.log.error({ err: error, community: deps.record.id, eventId: event.id }, 'store save failed')
      if (!tell(ctx.self, { type: 'Saved', event, raw, outcome: { status: 'error' }, plan, reply }))
        reply({ accepted: false, message: reason('error', 'could not store the event') })
    },
  )
  return state
}

/** The commit happened but this actor is gone (restarting): the event is stored, so OK true is the truth. */
const savedButUnannounced = (): PublishOutcome => ({ accepted: true, message: '' })

function refuse(state: CommunityState, reply: (o: PublishOutcome) => void, message: PublishOutcome['message']) {
  reply({ accepted: false, message } as PublishOutcome)
  return state
}

async function onSaved(state: CommunityState, msg: Extract<CommunityMsg, { type: 'Saved' }>, deps: CommunityDeps) {
  const { event, raw, outcome, reply } = msg
  switch (outcome.status) {
    case 'saved': {
      for (const id of outcome.removedIds) state.recent.delete(id)
      state.recent.add(event.id)
      state.accepted++
      const changes = msg.plan ? await applyChannelPlanLogged(msg.plan, event, state.channels) : []
      await fanOut(state, event, raw, deps)
      deps.cluster.link.publishEvent(raw)
      await announce(state, changes, deps)
      reply({ accepted: true, message: '' })
      return state
    }
    case 'duplicate':
      state.recent.add(event.id)
      reply({ accepted: true, message: reason('duplicate', 'already have this event') })
      return state
    case 'superseded':
      return refuse(state, reply, reason('duplicate', 'a newer version of this event is already stored'))
    case 'deleted':
      return refuse(state, reply, reason('blocked', 'this event was deleted by its author'))
    case 'error':
      return refuse(state, reply, reason('error', 'could not store the event'))
    default:
      return assertNever(outcome)
  }
}


/**
 * Banned events (NIP-86 banevent) are few: kept in memory, re-read whenever the record is. An id banned or
 * allowed since leaves the inbound guard too: a banned one was deleted, and a resend of an allowed one must
 * reach the store rather than be answered `duplicate:`.
 */
async function loadBannedEvents(current: CommunityState['current'], deps: CommunityDeps, recent?: RecentIds) {
  try {
    const next = new Set((await deps.communities.listBannedEvents(deps.record.id)).map((e) => e.value))
    if (recent) for (const id of [...current.bannedEvents, ...next]) recent.delete(id)
    current.bannedEvents = next
  } catch (error) {
    deps.log.warn({ err: error, community: deps.record.id }, 'banned events unavailable; keeping the previous list')
  }
}

/** The relay's own channel events: delivered here and to the other nodes like any accepted event. */
async function announce(state: CommunityState, events: RelayEvent[], deps: CommunityDeps) {
  for (const c of events) {
    await fanOut(state, c.event, c.raw, deps)
    deps.cluster.link.publishEvent(c.raw)
  }
}

/** Best effort: a lost broadcast is covered by the ban row checked at AUTH and at every write (DESIGN §5). */
async function broadcast(deps: CommunityDeps, op: ConnControlOp) {
  await deps.cluster.link.broadcast('conn-control', op).catch((error: unknown) => {
    deps.log.warn({ err: error, community: deps.record.id }, 'conn-control broadcast failed')
  })
}
