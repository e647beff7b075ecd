// State: CommunityState (community-state.ts): what it keeps across restarts, and what `init` builds afresh.
// Messages: CommunityMsg (messages.ts): from connections, the host and the other nodes; its own I/O's results.
// Crash policy: permanent, respawned after giving up: every connection of its tenant talks to it (docs/architecture.md §4.5).
//
// One community's hub on this node: writes, reads, live fan-out, presence, cluster traffic. No handler
// awaits (docs/architecture.md §5): each starts its I/O beside the actor and returns, and the result comes
// back as a message, so reads never wait behind writes, nor writes behind reads.
import { assertNever } from '../../protocols/result.js'
import { type ActorDef, type TypedRef, tell, tellUntilTaken } from '../kernel/index.js'
import { onAgentScan } from './agent-scan.js'
import { ChannelReads, latestIdsOf } from './channel-reads.js'
import { broadcastLogged, onControl, onInvalidateCache } from './cluster-control.js'
import { type ChannelDeps, DeferredState } from './community-channels.js'
import { onDisconnect, onJoin, onStats, onUnsubscribe, registerSender } from './community-connections.js'
import { onCount, onReadResult, onSubscribe } from './community-reads.js'
import type { CommunityDeps, CommunityState, CommunitySurvivors, Ctx } from './community-state.js'
import { createCommunitySurvivors } from './community-survivors.js'
import { loadBannedEvents, onBannedEventsRead, onRecordChanged, onSweep } from './community-upkeep.js'
import { answerHeldWrites, onModerated, onPrepared, onPublish, onWriteDone } from './community-writes.js'
import { onDisconnectOrder } from './disconnects.js'
import { onDropped } from './dropped-messages.js'
import { actOnLag, onLagged } from './lagged.js'
import type { MemberList } from './member-list.js'
import { createMemberList, onMembersChanged, onMembershipSettled } from './membership-changes.js'
import { type CommunityMsg, REDELIVER } from './messages.js'
import { onPresenceWritten } from './presence-writes.js'
import { RecentIds } from './recent-ids.js'
import { onAnnounce, onPublishChannelState } from './relay-events.js'
import { onRemoteEvent } from './remote-events.js'
import { startStateRekey } from './state-rekey.js'
import { onApplied, onCommanded, onSaved } from './write-commit.js'

export const communityPath = (id: string) => `community/${id}`

// also how soon writes held behind a channel change that never completed are answered (community-upkeep.ts)
const DEFAULT_SWEEP_INTERVAL_MS = 10_000
/** Ids the inbound duplicate guard remembers (recent-ids.ts). */
const RECENT_IDS = 10_000
// a tenant's bursts (a reconnect storm's REQs, an agent fleet's heartbeats) queue here rather than fail
const MAILBOX_CAPACITY = 100_000

/** `survivors`: what outlives the actor's restarts (community-state.ts); the composition root may share it. */
export function communityActor(
  deps: CommunityDeps,
  survivors: CommunitySurvivors = createCommunitySurvivors(deps),
): ActorDef<CommunityState, CommunityMsg> {
  let self: TypedRef<CommunityMsg> | undefined
  let sweepTimer: ReturnType<typeof setInterval> | undefined
  let agentScanTimer: ReturnType<typeof setInterval> | undefined
  let memberList: MemberList | undefined
  deps.cluster.link.onLagLost((stream, lag) => actOnLag(survivors, stream, lag, deps))
  return {
    kind: 'community',
    // runs again on every restart and respawn: the banned ids are re-read; writes wait only for the first load
    init: (ctx) => {
      self = ctx.self
      // set once for the def, not per restart; a tick the actor cannot take (full, down) is skipped: the next one sweeps
      sweepTimer ??= setInterval(() => tell(ctx.self, { type: 'Sweep' }), deps.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS)
      sweepTimer.unref?.()
      agentScanTimer ??= setInterval(() => tell(ctx.self, { type: 'AgentScan' }), deps.agents.scanIntervalMs)
      agentScanTimer.unref?.()
      // once for the def too: a republish in flight or waiting outlives a restart, and only a spawn (not a
      // crash) may find the stored list stale (admins or the roster changed while no actor ran)
      if (!memberList) {
        memberList = createMemberList(ctx.self, survivors, deps)
        memberList.refresh()
      }
      return initialState(ctx, survivors, deps, memberList)
    },
    handle: (state, msg, ctx) => {
      try {
        return handle(state, msg, ctx, deps)
      } catch (error) {
        answerHeldWrites(state)
        throw error
      } finally {
        // the events channel is watched only while someone here is subscribed (docs/architecture.md §6.7)
        deps.cluster.link.setInterest(state.index.size > 0)
      }
    },
    // the community gave up: what was queued must not vanish (dropped-messages.ts)
    onDropped: (msg) => {
      if (self) onDropped(msg, self, survivors, deps)
    },
    afterStop: (state) => {
      clearInterval(sweepTimer)
      clearInterval(agentScanTimer)
      survivors.agents.dispose()
      state?.deferred.stop()
      deps.cluster.link.close()
    },
    mailboxCapacity: MAILBOX_CAPACITY,
    policy: { mode: 'permanent' },
  }
}

/** What a (re)started community builds afresh (the duplicate guard, counters, channel deps); the banned ids are re-read. */
function initialState(ctx: Ctx, survivors: CommunitySurvivors, deps: CommunityDeps, memberList: MemberList): CommunityState {
  loadBannedEvents(ctx, deps)
  const deferred = new DeferredState((channel, what) =>
    tellUntilTaken(
      ctx.self,
      { type: 'PublishChannelState', channel, what },
      {
        ...REDELIVER,
        onGiveUp: () => deps.log.warn({ community: deps.record.id, channel }, 'channel state not published; the next change publishes it'),
      },
    ),
  )
  const channels = channelDepsOf(survivors, deferred, deps)
  startStateRekey(ctx, survivors, channels, deps)
  return { ...survivors, recent: new RecentIds(RECENT_IDS), accepted: 0, deferred, channels, memberList }
}

function handle(state: CommunityState, msg: CommunityMsg, ctx: Ctx, deps: CommunityDeps): CommunityState {
  registerSender(state, msg)
  switch (msg.type) {
    case 'Publish':
      return onPublish(state, msg, ctx, deps)
    case 'Prepared':
      return onPrepared(state, msg, ctx, deps)
    case 'Moderated':
      return onModerated(state, msg, ctx, deps)
    case 'Commanded':
      return onCommanded(state, msg, ctx, deps)
    case 'PresenceWritten':
      return onPresenceWritten(state, msg, deps)
    case 'Saved':
      return onSaved(state, msg, ctx, deps)
    case 'Applied':
      return onApplied(state, msg, ctx, deps)
    case 'WriteDone':
      return onWriteDone(state, msg, ctx, deps)
    case 'Subscribe':
      return onSubscribe(state, msg, ctx, deps)
    case 'ReadResult':
      return onReadResult(state, msg, deps)
    case 'Count':
      return onCount(state, msg, ctx, deps)
    case 'Unsubscribe':
      return onUnsubscribe(state, msg)
    case 'Join':
      return onJoin(state, msg)
    case 'Disconnect':
      return onDisconnect(state, msg, deps)
    case 'Stats':
      return onStats(state, msg, deps)
    case 'RemoteEvent':
      return onRemoteEvent(state, msg, deps)
    case 'Lagged':
      return onLagged(state, msg, ctx, deps)
    case 'Control':
      return onControl(state, msg, ctx, deps)
    case 'InvalidateCache':
      return onInvalidateCache(state, msg, deps)
    case 'DisconnectPubkey':
    case 'DisconnectIp':
    case 'DisconnectCommunity':
      return onDisconnectOrder(state, msg, deps)
    case 'Announce':
      return onAnnounce(state, msg, deps)
    case 'PublishChannelState':
      return onPublishChannelState(state, msg, ctx, deps)
    case 'RecordChanged':
      return onRecordChanged(state, msg, ctx, deps)
    case 'MembersChanged':
      return onMembersChanged(state, msg, ctx, deps)
    case 'MembershipSettled':
      return onMembershipSettled(state, msg, deps)
    case 'BannedEventsRead':
      return onBannedEventsRead(state, msg, ctx, deps)
    case 'Sweep':
      return onSweep(state, deps)
    case 'AgentScan':
      return onAgentScan(state, deps)
    default:
      return assertNever(msg)
  }
}

/** How this community's NIP-29 channel changes reach the stores, the caches and the other nodes. */
function channelDepsOf(s: CommunitySurvivors, deferred: DeferredState, deps: CommunityDeps): ChannelDeps {
  const id = deps.record.id
  return {
    community: id,
    channels: deps.channels,
    reads: new ChannelReads(deps.channels, id, latestIdsOf(deps.store, id, deps.channelRules.timelineWindowEvents, deps.nowSeconds)),
    events: deps.store,
    relayPubkey: deps.communityPubkey,
    isModerator: (pubkey) => pubkey === deps.communityPubkey || s.current.record.admins.includes(pubkey),
    sign: deps.sign,
    defer: (channel, what) => deferred.add(channel, what),
    invalidate: (op) => {
      s.gate.invalidate(op)
      return broadcastLogged(deps, 'cache-invalidation', op)
    },
    nowSeconds: deps.nowSeconds,
    latePublication: deps.channelRules,
    log: deps.log,
  }
}
