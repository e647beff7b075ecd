import type { CommunityRecord } from '../../infra/store/community-store.js'
import type { SaveOutcome, StoredEvent } from '../../infra/store/event-store.js'
import type { CacheInvalidationOp, ConnControlOp, ControlChannel } from '../../protocols/control.js'
import type { VerifiedEvent } from '../../protocols/nip01/event.js'
import type { Filter } from '../../protocols/nip01/filter.js'
import type { Reason } from '../../protocols/reasons.js'
import type { Result } from '../../protocols/result.js'
import type { Settled } from '../kernel/index.js'
import type { ChannelPlan, RelayEvent, StateWanted } from './community-channels.js'
import type { PresenceHold } from './community-presence.js'
import type { ConnView, Subscription } from './subscription-index.js'

/** The stored part of a REQ, read beside the actor. */
export interface Page {
  stored: StoredEvent[]
  presence: string[]
  /** false: the bus could not give live events from other nodes; the subscription ends after EOSE */
  live: boolean
}

/** The answer to a publish: what the OK frame says. `message` is '' or a prefixed reason. */
export type PublishOutcome = { accepted: true; message: '' | Reason } | { accepted: false; message: Reason }

export interface CommunityStats {
  id: string
  subscriptions: number
  connections: number
  eventsAccepted: number
  /** connections holding a presence (kind 20001) here */
  presenceHolders: number
}

/** `conn`: the publishing connection (presence is held by it); absent when the relay itself publishes */
export type PublishMsg = { type: 'Publish'; event: VerifiedEvent; raw: string; conn?: ConnView; reply: (o: PublishOutcome) => void }

export type CommunityMsg =
  | PublishMsg
  | {
      type: 'Saved'
      event: VerifiedEvent
      raw: string
      /** `late`: the commit outlived its deadline and may still land (postgres); its outcome comes as LateCommit */
      outcome: SaveOutcome | { status: 'error'; late?: Promise<SaveOutcome> }
      /** a channel event's change, applied once the event is stored */
      plan?: ChannelPlan
      /** the channel whose later writes wait for this one (write-order.ts) */
      ordered?: string
      reply: (o: PublishOutcome) => void
    }
  /** the checks that read before a write (membership, the channel's rows), done beside the actor */
  | { type: 'Prepared'; publish: PublishMsg; ordered?: string; sinceMs: number; outcome: Settled<Result<ChannelPlan | undefined>> }
  /** the channel's owner node decided a moderation event (the relay mesh, issue 12): answer its writer */
  | { type: 'Moderated'; publish: PublishMsg; ordered?: string; outcome: Settled<PublishOutcome> }
  /** this node owns a channel session and stored these (the moderation event, then the relay's): deliver and publish them */
  | { type: 'MeshApplied'; events: RelayEvent[] }
  /** this node's channel owner changed rows: drop the cache keys here and on every other node */
  | { type: 'MeshInvalidate'; op: CacheInvalidationOp }
  /** a presence heartbeat went to the presence store (or did not) */
  | { type: 'PresenceSet'; publish: PublishMsg; hold: PresenceHold; outcome: Settled<void> }
  /** a stored event's channel change was applied (`changes`: the relay's own events to deliver): it takes effect now */
  | {
      type: 'Applied'
      event: VerifiedEvent
      raw: string
      removedIds: string[]
      changes: RelayEvent[]
      ordered?: string
      /** absent for a late commit: its writer was answered already */
      reply?: (o: PublishOutcome) => void
      /** came back from the channel change beside the actor (counted as an effect in flight until handled) */
      piped?: boolean
    }
  /** a commit whose result the actor did not take when it came (past its deadline, or while down): apply it now */
  | {
      type: 'LateCommit'
      event: VerifiedEvent
      raw: string
      outcome: SaveOutcome
      plan?: ChannelPlan
      ordered?: string
      /** counted as an effect in flight (an undelivered Saved, or a commit that outlived its deadline) */
      counted?: boolean
    }
  /** a REQ's stored page, read beside the actor (a Reason: refused by the read policy) */
  | { type: 'PageRead'; sub: Subscription; outcome: Settled<Page | Reason> }
  /** a COUNT beside the actor failed on the store (its asker heard `error:`): an outage, for supervision */
  | { type: 'ReadFailed'; error: unknown }
  /** a control payload verified beside the actor */
  | { type: 'ControlAccepted'; op: ConnControlOp | CacheInvalidationOp | undefined }
  /**
   * The relay's own events, to deliver here and publish to the other nodes: channel state published beside
   * the actor (counted as an effect in flight until handled), or the agent registry's arrivals and departures
   */
  | { type: 'Announce'; events: RelayEvent[]; from: 'channel-state' | 'registry' }
  /** a channel change failed and its Saved could not be delivered: the channel's waiting writes may go on */
  | { type: 'WriteDone'; channel: string }
  /** the banned event ids (NIP-86 banevent) read from the store; writes wait for the first load */
  | { type: 'BannedEventsLoaded'; ids: string[] }
  | { type: 'BannedEventsFailed'; error: unknown }
  /** forget connections that closed without a Disconnect, and writes that never came back (periodic) */
  | { type: 'Sweep' }
  /** a presence "offline" (the agent client's goodbye) cleared the presence beside the actor (or failed to) */
  | { type: 'ByeDone'; publish: PublishMsg; outcome: Settled<void> }
  /** the bus lost this community's events channel for a while: every live subscription may have a gap */
  | { type: 'LiveInterrupted' }
  | { type: 'Subscribe'; conn: ConnView; subId: string; filters: Filter[] }
  | { type: 'Unsubscribe'; connId: string; subId: string }
  | { type: 'Count'; conn: ConnView; subId: string; filters: Filter[]; reply: (count: number | Reason) => void }
  | { type: 'Join'; conn: ConnView }
  | { type: 'Disconnect'; connId: string }
  /** an event another node accepted (raw JSON from the bus) */
  | { type: 'RemoteEvent'; raw: string }
  /** a signed control payload from the bus, not yet verified */
  | { type: 'Control'; channel: ControlChannel; raw: string }
  /** close this node's sockets authenticated as `pubkey` (a ban); `broadcast` also tells the other nodes */
  | { type: 'DisconnectPubkey'; pubkey: string; reason: string; broadcast: boolean }
  | { type: 'DisconnectCommunity'; reason: string; broadcast: boolean; done?: () => void }
  | { type: 'Stats'; reply: (s: CommunityStats) => void }
  /** publish a channel's relay-signed state now (deferred while a burst of changes was ahead of the clock) */
  | { type: 'PublishChannelState'; channel: string; what: StateWanted }
  /** the store's record changed (settings, roster, admins, kind rules, banned events): use it from now on */
  | { type: 'RecordChanged'; record: CommunityRecord }

/**
 * How the results of a community's own I/O are offered again when it can't take them (pipeTo,
 * tellUntilTaken). A community that is down is respawned within 30 s (its kind supervisor's longest delay):
 * they are offered until then, with room to spare.
 */
export const REDELIVER = { everyMs: 500, forMs: 60_000 } as const
