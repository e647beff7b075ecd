// State: the live-subscription index, presence holds per connection, the recent-id guard and counters, the
// current record (settings, roster, kind rules) with the banned event ids, the access gate's caches, the live
// feed (delivery in order), the read slots, and the order of writes that must wait for a channel change.
// Messages: CommunityMsg (publish, subscribe, count, disconnect, control, record changes, stats, sweep) and
// the results of its I/O that come back to it (Prepared, PresenceSet, Saved, Applied, LateCommit, PageRead,
// ReadDone, ControlAccepted, Announce, BannedEventsLoaded/Failed). No handler awaits (DESIGN §3): each starts
// its I/O beside the actor and returns; reads never wait behind writes, nor writes behind reads.
// Crash policy: permanent with backoff; after giving up it is respawned by its kind supervisor. The index,
// the connections, the presence holds and the live feed live outside the state and survive both: their
// connections still believe they are subscribed, and events are never silently skipped for them (nor a
// presence count leaked).

import { KIND_DEPARTURE } from '../../protocols/agent-registry.js'
import type { CacheInvalidationOp } from '../../protocols/control.js'
import { StateGenerations } from '../../protocols/mesh/state-generation.js'
import { parseEventShape } from '../../protocols/nip01/event.js'
import { reason } from '../../protocols/reasons.js'
import { assertNever } from '../../protocols/result.js'
import { type ActorContext, type ActorDef, pipeTo, type TypedRef, tell } from '../kernel/index.js'
import { liveLeases } from '../registry/lease-reads.js'
import { AccessGate } from './access-gate.js'
import { ChannelReads } from './channel-reads.js'
import { type ChannelDeps, DeferredState, publishState, type RelayEvent } from './community-channels.js'
import { acceptControl, parseRemoteEvent, toLocalMessage } from './community-cluster.js'
import type { PresenceHolds } from './community-presence.js'
import {
  LIVE_INTERRUPTED,
  loseAll,
  loseMatching,
  onCount,
  onPageRead,
  onReadFailed,
  onSubscribe,
  REMOTE_UNDELIVERED,
} from './community-reads.js'
import type { CommunityDeps, CommunityState } from './community-state.js'
import { forget, loadBannedEvents, onBannedEventsLoaded, onSweep } from './community-upkeep.js'
import {
  announce,
  broadcastLogged,
  disconnectHere,
  dropped,
  effectDone,
  lostAnnounce,
  onApplied,
  onByeDone,
  onLateCommit,
  onModerated,
  onPrepared,
  onPresenceSet,
  onPublish,
  onSaved,
  onWriteDone,
} from './community-writes.js'
import { ControlReplayMemory } from './control-replay.js'
import { LiveFeed } from './live-feed.js'
import { type CommunityMsg, REDELIVER } from './messages.js'
import { ReadSlots } from './read-slots.js'
import { RecentIds } from './recent-ids.js'
import { type ConnectionRegistry, SubscriptionIndex } from './subscription-index.js'
import { WriteOrder } from './write-order.js'

type Ctx = ActorContext<CommunityMsg>

export const communityPath = (id: string) => `community/${id}`

/** Writes held at once (behind a channel change, or before the banned ids are loaded); past it, `error:`. */
const MAX_HELD_WRITES = 10_000
/** Reads (REQ, COUNT) of one community running at once, and waiting; past both, `error:`. */
const MAX_RUNNING_READS = 16
const DEFAULT_MAX_HELD_LIVE_BYTES = 4 * 1024 * 1024
const MAX_WAITING_READS = 1_000
// also how soon writes held behind a channel change that never completed are answered (community-upkeep.ts)
const DEFAULT_SWEEP_INTERVAL_MS = 10_000
const PIPE = REDELIVER

export function communityActor(deps: CommunityDeps, presenceHolds: PresenceHolds = new Map()): ActorDef<CommunityState, CommunityMsg> {
  const index = new SubscriptionIndex()
  const conns: ConnectionRegistry = new Map()
  const current = { record: deps.record, bannedEvents: new Set<string>(), bannedLoaded: false }
  const replays = new ControlReplayMemory()
  const id = deps.record.id
  const inflight = { effects: 0 }
  // outside the state, as the index is: a channel change in flight across a crash still holds its channel
  // (its result comes back to the respawned actor), and the first banned-ids load still gates every write
  const writes = new WriteOrder(MAX_HELD_WRITES)
  const reads = new ReadSlots(MAX_RUNNING_READS, MAX_WAITING_READS)
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
    reads: new ChannelReads(deps.channels, id),
    events: deps.store,
    relayPubkey: deps.cluster.relayPubkey,
    isModerator: (pubkey) => pubkey === deps.cluster.relayPubkey || current.record.admins.includes(pubkey),
    sign: deps.sign,
    defer: (channel, what) => deferred.add(channel, what),
    invalidate: (op) => {
      gate.invalidate(op)
      return broadcastLogged(deps, 'cache-invalidation', op)
    },
    nowSeconds: deps.nowSeconds,
    log: deps.log,
  }
  const generations = new StateGenerations(deps.cluster.relayPubkey)
  const feed = new LiveFeed({
    community: id,
    stale: (event) => {
      if (!generations.stale(event)) return false
      deps.cluster.rejected('stale-state-generation')
      return true
    },
    gate,
    index,
    metrics: deps.metrics,
    log: deps.log,
    // a 31990 goes live only while its author's lease is (the presence store decides, on every node)
    leaseHeld: async (pubkey) => (await liveLeases(deps.presence.store, id, [pubkey])).has(pubkey),
    maxHeldBytes: deps.maxHeldLiveBytes ?? DEFAULT_MAX_HELD_LIVE_BYTES,
    nowMs: deps.nowMs,
  })
  let self: TypedRef<CommunityMsg> | undefined
  let sweepTimer: ReturnType<typeof setInterval> | undefined
  const deferred = new DeferredState((channel, what) => self !== undefined && tell(self, { type: 'PublishChannelState', channel, what }))
  // a remote event this community could not take: the subscriptions it would have reached are closed
  deps.cluster.link.onUndelivered((raw) => {
    if (raw === undefined) return deps.lagged(loseAll(index, LIVE_INTERRUPTED))
    const event = parseEventShape(raw)
    if (event) deps.lagged(loseMatching(index, event, REMOTE_UNDELIVERED))
  })
  return {
    kind: 'community',
    // runs again on every restart and respawn: the banned ids are re-read; writes wait only for the first load
    init: (ctx) => {
      self = ctx.self
      sweepTimer ??= setInterval(() => tell(ctx.self, { type: 'Sweep' }), deps.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS)
      sweepTimer.unref?.()
      loadBannedEvents(ctx, deps)
      return {
        index,
        conns,
        presenceHolds,
        recent: new RecentIds(10_000),
        accepted: 0,
        current,
        gate,
        channels,
        writes,
        feed,
        reads,
        inflight,
      }
    },
    handle: (state, msg, ctx) => {
      try {
        return handle(state, msg, ctx, deps, replays)
      } catch (error) {
        // the writes held hear now, not at their ask's timeout (a crash may be the first of a give-up)
        for (const held of state.writes.drain()) {
          try {
            held.reply({ accepted: false, message: reason('error', 'could not process the event') })
          } catch {
            // a reply callback that throws must not keep the others from theirs
          }
        }
        throw error
      } finally {
        // the events channel is watched only while someone here is subscribed (DESIGN §5)
        deps.cluster.link.setInterest(state.index.size > 0)
      }
    },
    // the community gave up: what was queued must not vanish (onDropped in community-writes.ts)
    onDropped: (msg) => {
      if (self) dropped(msg, self, { index, conns, presenceHolds, writes, inflight }, deps)
    },
    afterStop: () => {
      clearInterval(sweepTimer)
      deferred.stop()
      deps.cluster.link.close()
    },
    mailboxCapacity: 100_000,
    policy: { mode: 'permanent' },
  }
}

function handle(state: CommunityState, msg: CommunityMsg, ctx: Ctx, deps: CommunityDeps, replays: ControlReplayMemory): CommunityState {
  // a connection whose Join was refused (it opened while this community was down) registers with its first
  // request: a ban or an archive must reach it like any other
  if (
    (msg.type === 'Publish' || msg.type === 'Subscribe' || msg.type === 'Count') &&
    msg.conn &&
    !msg.conn.queue.closed &&
    !state.conns.has(msg.conn.id)
  )
    state.conns.set(msg.conn.id, msg.conn)
  switch (msg.type) {
    case 'Publish':
      return onPublish(state, msg, ctx, deps)
    case 'Prepared':
      return onPrepared(state, msg, ctx, deps)
    case 'PresenceSet':
      return onPresenceSet(state, msg, deps)
    case 'ByeDone':
      return onByeDone(state, msg, deps)
    case 'Saved':
      return onSaved(state, msg, ctx, deps)
    case 'Applied':
      return onApplied(state, msg, ctx, deps)
    case 'LateCommit':
      return onLateCommit(state, msg, ctx, deps)
    case 'WriteDone':
      return onWriteDone(state, msg.channel, ctx, deps)
    case 'Subscribe':
      return onSubscribe(state, msg, ctx, deps)
    case 'PageRead':
      return onPageRead(state, msg, deps, deps.cluster.link.clustered)
    case 'ReadFailed':
      return onReadFailed(msg)
    case 'Unsubscribe':
      state.index.remove(msg.connId, msg.subId)
      return state
    case 'Join':
      state.conns.set(msg.conn.id, msg.conn)
      return state
    case 'Count':
      return onCount(state, msg, ctx, deps)
    case 'Disconnect':
      forget(state, msg.connId, deps)
      return state
    case 'RemoteEvent': {
      const remote = parseRemoteEvent(msg.raw, deps.cluster)
      // a departure is the relay's word (docs/agent-registry.md): from the bus too, only under the relay key
      if (remote?.event.kind === KIND_DEPARTURE && remote.event.pubkey !== deps.cluster.relayPubkey) {
        deps.cluster.rejected('remote-departure-signer')
        return state
      }
      if (remote) state.feed.offer(remote.event, msg.raw, remote.check)
      return state
    }
    case 'Control':
      // verified beside the actor
      pipeTo(
        ctx.self,
        acceptControl(msg, deps.record.id, deps.cluster, replays),
        (o): CommunityMsg => ({ type: 'ControlAccepted', op: o.ok ? o.value : undefined }),
        PIPE,
      )
      return state
    case 'ControlAccepted': {
      const { op } = msg
      if (!op) return state
      // an archive, a new community or a roster change on another node: re-read the community list now
      // rather than at the next revalidation
      if (op.op === 'DisconnectCommunity' || op.op === 'InvalidateAll') deps.cluster.revalidate()
      if (op.op === 'DisconnectPubkey' || op.op === 'DisconnectCommunity') return handle(state, toLocalMessage(op), ctx, deps, replays)
      state.gate.invalidate(op as CacheInvalidationOp)
      return state
    }
    case 'PublishChannelState': {
      const out: RelayEvent[] = []
      const published = publishState(state.channels, msg.channel, out, msg.what).then(
        () => out,
        (error: unknown) => {
          deps.log.error({ err: error, community: deps.record.id, channel: msg.channel }, 'channel state not published')
          return out
        },
      )
      state.inflight.effects++
      pipeTo(ctx.self, published, (o): CommunityMsg => ({ type: 'Announce', events: o.ok ? o.value : [], from: 'channel-state' }), {
        ...PIPE,
        onGiveUp: (m) => lostAnnounce(state, m, deps),
      })
      return state
    }
    case 'Announce':
      if (msg.from === 'channel-state') effectDone(state)
      announce(state, msg.events, deps)
      return state
    case 'Moderated':
      return onModerated(state, msg, ctx, deps)
    case 'MeshApplied':
      for (const e of msg.events) state.recent.add(e.event.id)
      announce(state, msg.events, deps)
      return state
    case 'MeshInvalidate':
      state.gate.invalidate(msg.op)
      void broadcastLogged(deps, 'cache-invalidation', msg.op)
      return state
    case 'RecordChanged':
      state.current.record = msg.record
      // roster, admins or the allowed list may have changed: community membership answers are re-read
      state.gate.invalidate({ op: 'InvalidateMembers' })
      loadBannedEvents(ctx, deps)
      return state
    case 'BannedEventsLoaded':
      return onBannedEventsLoaded(state, msg.ids, ctx, deps)
    case 'BannedEventsFailed':
      // before the first load no write may be judged without the list: crash, and let supervision retry
      if (!state.writes.ready) throw msg.error
      deps.log.warn({ err: msg.error, community: deps.record.id }, 'banned events unavailable; keeping the previous list')
      return state
    case 'Sweep':
      return onSweep(state, deps)
    case 'LiveInterrupted':
      deps.log.warn(
        { community: deps.record.id, subscriptions: state.index.size },
        'live events from other nodes interrupted: closing live subscriptions',
      )
      deps.lagged(loseAll(state.index, LIVE_INTERRUPTED))
      return state
    case 'DisconnectPubkey':
    case 'DisconnectCommunity':
      disconnectHere(state.conns, msg, deps)
      return state
    case 'Stats':
      msg.reply({
        id: deps.record.id,
        subscriptions: state.index.size,
        connections: state.conns.size,
        eventsAccepted: state.accepted,
        presenceHolders: state.presenceHolds.size,
      })
      return state
    default:
      return assertNever(msg)
  }
}
