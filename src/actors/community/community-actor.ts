// State: the live-subscription index, presence holds per connection, the recent-id guard and counters.
// Messages: CommunityMsg (publish, subscribe, count, disconnect, stats) and Saved (a store commit came back).
// Crash policy: permanent with backoff. The index is created once per activation and survives a restart:
// its connections still believe they are subscribed, and events are never silently skipped for them (the
// presence holds survive likewise, so a restart can't leak a connection count).

import type { Logger } from '../../infra/log'
import type { Metrics } from '../../infra/metrics'
import type { CommunityRecord } from '../../infra/store/community-store'
import type { EventStore, QueryOptions, StoredEvent } from '../../infra/store/event-store'
import type { ConnControlOp } from '../../protocols/control'
import { AUTHOR_ONLY_KINDS, canRead } from '../../protocols/dm-access'
import type { Limits } from '../../protocols/limits'
import type { VerifiedEvent } from '../../protocols/nip01/event'
import { effectiveLimit } from '../../protocols/nip01/filter'
import { KIND_AUTH, kindClass } from '../../protocols/nip01/kinds'
import { closedFrame, eoseFrame, eventFrame } from '../../protocols/nip01/relay-message'
import { isExpired } from '../../protocols/nip40'
import { reason } from '../../protocols/reasons'
import { assertNever } from '../../protocols/result'
import { type ActorContext, type ActorDef, tell } from '../kernel'
import { acceptControl, acceptRemoteEvent, type ClusterDeps, disconnectAll, disconnectPubkey, toLocalMessage } from './community-cluster'
import { KIND_PRESENCE, type PresenceDeps, type PresenceHolds, queryPresence, releasePresence, setPresence } from './community-presence'
import type { CommunityMsg, PublishOutcome } from './messages'
import { RecentIds } from './recent-ids'
import { type ConnectionRegistry, type ConnView, SubscriptionIndex } from './subscription-index'

export interface CommunityDeps {
  record: CommunityRecord
  store: EventStore
  limits: Limits
  nowSeconds: () => number
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
}

type Ctx = ActorContext<CommunityMsg>

export const communityPath = (id: string) => `community/${id}`

export function communityActor(deps: CommunityDeps): ActorDef<CommunityState, CommunityMsg> {
  const index = new SubscriptionIndex()
  const conns: ConnectionRegistry = new Map()
  const presenceHolds: PresenceHolds = new Map()
  return {
    kind: 'community',
    init: () => ({ index, conns, presenceHolds, recent: new RecentIds(10_000), accepted: 0 }),
    handle: async (state, msg, ctx) => {
      const next = await handle(state, msg, ctx, deps)
      // the events channel is watched only while someone here is subscribed (DESIGN §5)
      deps.cluster.link.setInterest(state.index.size > 0)
      return next
    },
    afterStop: () => deps.cluster.link.close(),
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
      if (e) fanOut(state, e, msg.raw, deps)
      return state
    }
    case 'Control': {
      const op = await acceptControl(msg, deps.record.id, deps.cluster)
      // an archive, a new community or a roster change on another node: re-read the community list now
      // rather than at the next revalidation
      if (op?.op === 'DisconnectCommunity' || op?.op === 'InvalidateAll') deps.cluster.revalidate()
      if (op && (op.op === 'DisconnectPubkey' || op.op === 'DisconnectCommunity')) return handle(state, toLocalMessage(op), ctx, deps)
      // cache-invalidation ops: no caches to drop yet (membership caches arrive with NIP-29 channels)
      return state
    }
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
  // The inbound guard answers resends cheaply; the store stays authoritative for everything it forgot.
  if (state.recent.has(event.id)) {
    reply({ accepted: true, message: reason('duplicate', 'already have this event') })
    return state
  }
  if (kindClass(event.kind) === 'ephemeral') {
    if (event.kind === KIND_PRESENCE) {
      const refused = await setPresence(state.presenceHolds, state.conns, event, raw, msg.conn, deps.presence).catch((error: unknown) => {
        deps.log.error({ err: error, community: deps.record.id }, 'presence store failed')
        return reason('error', 'could not record presence')
      })
      if (refused) return refuse(state, reply, refused)
    }
    fanOut(state, event, raw, deps)
    deps.cluster.link.publishEvent(raw)
    reply({ accepted: true, message: '' })
    return state
  }
  const end = deps.metrics.storeLatency.startTimer({ op: 'save' })
  deps.store.save(deps.record.id, event, raw).then(
    (outcome) => {
      end()
      if (!tell(ctx.self, { type: 'Saved', event, raw, outcome, reply })) reply(savedButUnannounced())
    },
    (error: unknown) => {
      end()
      deps.log.error({ err: error, community: deps.record.id, eventId: event.id }, 'store save failed')
      if (!tell(ctx.self, { type: 'Saved', event, raw, outcome: { status: 'error' }, reply }))
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

function onSaved(state: CommunityState, msg: Extract<CommunityMsg, { type: 'Saved' }>, deps: CommunityDeps) {
  const { event, raw, outcome, reply } = msg
  switch (outcome.status) {
    case 'saved':
      for (const id of outcome.removedIds) state.recent.delete(id)
      state.recent.add(event.id)
      state.accepted++
      fanOut(state, event, raw, deps)
      deps.cluster.link.publishEvent(raw)
      reply({ accepted: true, message: '' })
      return state
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

/** Live delivery: one frame per matching subscription, built from the stored raw JSON by concatenation. */
function fanOut(state: CommunityState, event: VerifiedEvent, raw: string, deps: CommunityDeps) {
  let delivered = 0
  for (const sub of state.index.match(event)) {
    if (!canRead(event, sub.conn.authed)) continue
    if (sub.conn.queue.push(eventFrame(sub.subId, raw))) delivered++
  }
  if (delivered) deps.metrics.fanoutDeliveries.inc(delivered)
}

async function onSubscribe(state: CommunityState, msg: Extract<CommunityMsg, { type: 'Subscribe' }>, deps: CommunityDeps) {
  const { conn, subId, filters } = msg
  const clamped = filters.map((f) => ({ ...f, limit: effectiveLimit(f, deps.limits) }))
  // live events from other nodes must start arriving before this REQ's EOSE, or one could fall in between
  await deps.cluster.link.ensureInterest()
  const end = deps.metrics.storeLatency.startTimer({ op: 'query' })
  let stored: StoredEvent[]
  let presence: string[]
  try {
    // kind 20001 is never stored: its current presence comes from the presence store (DESIGN §6)
    ;[stored, presence] = await Promise.all([deps.store.query(deps.record.id, clamped, readOptions(conn, deps)), queryPresence(clamped, deps.presence)])
  } catch (error) {
    // The client hears of the outage at once; the actor crashes so supervision sees it (DESIGN §3).
    conn.queue.pushControl(closedFrame(subId, reason('error', 'could not query events')))
    throw error
  } finally {
    end()
  }
  for (const s of stored) conn.queue.push(eventFrame(subId, s.raw))
  for (const raw of presence) conn.queue.push(eventFrame(subId, raw))
  conn.queue.push(eoseFrame(subId))
  state.index.add(conn, subId, filters)
  return state
}

async function onCount(state: CommunityState, msg: Extract<CommunityMsg, { type: 'Count' }>, deps: CommunityDeps) {
  msg.reply(await deps.store.count(deps.record.id, msg.filters, readOptions(msg.conn, deps)))
  return state
}

/** What a store read may return to this connection: the access rule is decided in the query (DESIGN §6). */
const readOptions = (conn: ConnView, deps: CommunityDeps): QueryOptions => ({
  now: deps.nowSeconds(),
  authorOnly: { kinds: AUTHOR_ONLY_KINDS, readers: [...conn.authed] },
})

/** Best effort: a lost broadcast is covered by the ban row checked at AUTH and at every write (DESIGN §5). */
async function broadcast(deps: CommunityDeps, op: ConnControlOp) {
  await deps.cluster.link.broadcast('conn-control', op).catch((error: unknown) => {
    deps.log.warn({ err: error, community: deps.record.id }, 'conn-control broadcast failed')
  })
}
