// What a community actor accepts (docs/architecture.md §5): requests from connections and from the host,
// traffic from the other nodes, and the results of its own I/O, which come back to it as messages (§6).
import type { CommunityRecord } from '../../infra/store/community-store.js'
import type { SaveOutcome, StoredEvent } from '../../infra/store/event-store.js'
import type { JobWrite } from '../../infra/store/job-ledger.js'
import type { CacheInvalidationOp, ControlChannel } from '../../protocols/control.js'
import type { VerifiedEvent } from '../../protocols/nip01/event.js'
import type { Filter } from '../../protocols/nip01/filter.js'
import type { Reason } from '../../protocols/reasons.js'
import type { Result } from '../../protocols/result.js'
import type { Lag, Settled } from '../kernel/index.js'
import type { ChannelPlan, RelayEvent, StateWanted } from './community-channels.js'
import type { PresenceHold } from './community-presence.js'
import type { ConnView, Subscription } from './subscription-index.js'

/** The streams a community takes from the bus (community-link.ts). */
export type LinkStream = 'events' | ControlChannel

/** The stored part of a REQ, read beside the actor. */
export interface Page {
  stored: StoredEvent[]
  presence: string[]
  /** relay events made for this REQ, never stored (a NIP-43 invite) */
  minted: string[]
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

/** A publish as the host sends it: an event the relay verified (relay.publish, relay.publishSigned). */
export type HostPublishMsg = { type: 'Publish'; event: VerifiedEvent; raw: string; reply: (o: PublishOutcome) => void }
/** `conn`: the publishing connection (presence is held by it); absent when the relay itself publishes */
export type PublishMsg = HostPublishMsg & { conn?: ConnView }
/** close this node's sockets authenticated as `pubkey` (a ban); `broadcast` also tells the other nodes */
export type DisconnectPubkeyMsg = { type: 'DisconnectPubkey'; pubkey: string; reason: string; broadcast: boolean }
/** close this node's sockets whose client address lies in `range` (NIP-86 blockip); `broadcast` also tells the other nodes */
export type DisconnectIpMsg = { type: 'DisconnectIp'; range: string; reason: string; broadcast: boolean }
export type DisconnectCommunityMsg = { type: 'DisconnectCommunity'; reason: string; broadcast: boolean; done?: () => void }
export type StatsMsg = { type: 'Stats'; reply: (s: CommunityStats) => void }

/**
 * What a host program may send a community (the embedding API's `relay.community(id)`, NIP-86): the messages
 * with a use outside the relay. The rest is the actor's own plumbing, and a ref typed to these keeps a host
 * from forging it.
 */
export type CommunityHostMsg = HostPublishMsg | DisconnectPubkeyMsg | DisconnectCommunityMsg | StatsMsg

/** A change of the community's members: who became one, who stopped being one. */
export interface MembersChange {
  added: string[]
  removed: string[]
}

/** What a membership change beside the actor ends with: the answer its asker gets, the relay events it stored. */
export interface MembershipOutcome {
  answer: PublishOutcome
  events: RelayEvent[]
}

/** A store write's outcome. Without `reply` its writer was answered already: the commit landed late. */
export type SavedMsg = {
  type: 'Saved'
  event: VerifiedEvent
  raw: string
  /** `late`: the commit outlived its deadline and may still land (PostgreSQL); its outcome comes as a later Saved */
  outcome: SaveOutcome | { status: 'error'; late?: Promise<SaveOutcome> }
  /** a channel event's change, applied once the event is stored */
  plan?: ChannelPlan
  /** the channel whose later writes wait for this one (write-order.ts) */
  ordered?: string
  reply?: (o: PublishOutcome) => void
  /** the publishing connection's id: an announcement registers it as an agent connection */
  from?: string
  /** what it did to the jobs table (docs/jobs.md), told to the dispatchers once it takes effect */
  job?: JobWrite
}

/** A stored event's channel change was applied (`changes`: the relay's own events to deliver): it takes effect now. */
export type AppliedMsg = {
  type: 'Applied'
  event: VerifiedEvent
  raw: string
  removedIds: string[]
  changes: RelayEvent[]
  ordered?: string
  /** the publishing connection's id (SavedMsg) */
  from?: string
  /** absent for a late commit: its writer was answered already */
  reply?: (o: PublishOutcome) => void
  /** came back from the channel change beside the actor (counted as an effect in flight until handled) */
  piped?: boolean
  /** what its writer hears, when not OK true: a stored join request that waits for an admin (storedAnswer) */
  answer?: PublishOutcome
  /** SavedMsg's */
  job?: JobWrite
}

export type CommunityMsg =
  | PublishMsg
  | DisconnectPubkeyMsg
  | DisconnectIpMsg
  | DisconnectCommunityMsg
  | StatsMsg
  | { type: 'Subscribe'; conn: ConnView; subId: string; filters: Filter[] }
  | { type: 'Unsubscribe'; connId: string; subId: string }
  | { type: 'Count'; conn: ConnView; subId: string; filters: Filter[]; reply: (count: number | Reason) => void }
  | { type: 'Join'; conn: ConnView }
  | { type: 'Disconnect'; connId: string }
  /** the store's record changed (settings, roster, admins, kind rules, banned events): use it from now on */
  | { type: 'RecordChanged'; record: CommunityRecord }
  /** an event another node accepted (raw JSON from the bus) */
  | { type: 'RemoteEvent'; raw: string }
  /**
   * what this community could not take from a stream of the bus (its mailbox was full, it was down), or a gap
   * in the stream itself (`lag.interrupted`: the subscriber connection dropped), told as soon as it had room
   */
  | { type: 'Lagged'; stream: LinkStream; lag: Lag<string> }
  /** a signed control payload from the bus, not yet verified (what it asks for comes back as its own message) */
  | { type: 'Control'; channel: ControlChannel; raw: string }
  /** drop these cache keys here; `broadcast`: a change on this node (its mesh channel owner), so on every other node too */
  | { type: 'InvalidateCache'; op: CacheInvalidationOp; broadcast: boolean }
  /**
   * The relay's own events, to deliver here and publish to the other nodes: channel state or the NIP-43 member
   * list published beside the actor (an effect in flight until handled), a mesh channel owner's stored events on this node (their
   * ids join the duplicate guard), or the agent registry's arrivals and departures.
   */
  | { type: 'Announce'; events: RelayEvent[]; from: 'channel-state' | 'member-list' | 'mesh' | 'registry' | 'jobs' }
  /** the host changed the allowed list (NIP-86): publish the NIP-43 8000/8001 and member list; `done` once stored */
  | ({ type: 'MembersChanged'; done?: () => void } & MembersChange)
  /**
   * A membership change (a NIP-43 join or leave, or MembersChanged) came back from beside the actor: its 8000/8001
   * are stored (an effect in flight until handled); deliver them, then answer its asker.
   */
  | {
      type: 'MembershipSettled'
      outcome: Settled<MembershipOutcome>
      reply?: (o: PublishOutcome) => void
      done?: () => void
    }
  /** the checks that read before a write (membership, the channel's rows), done beside the actor */
  | { type: 'Prepared'; publish: PublishMsg; ordered?: string; sinceMs: number; outcome: Settled<Result<ChannelPlan | undefined>> }
  /** the channel's owner node decided a moderation event (the relay mesh): answer its writer */
  | { type: 'Moderated'; publish: PublishMsg; ordered?: string; outcome: Settled<PublishOutcome> }
  /** a channel command (an invite code's 9009 or 9021, never stored) was acted on beside the actor: answer it */
  | { type: 'Commanded'; publish: PublishMsg; ordered?: string; outcome: Settled<Result<RelayEvent[]>> }
  /** a presence write beside the actor came back: a heartbeat set (`hold`: the hold it took), or a goodbye cleared */
  | { type: 'PresenceWritten'; publish: PublishMsg; outcome: Settled<void>; hold?: PresenceHold }
  | SavedMsg
  | AppliedMsg
  /** a channel change failed and its result could not be delivered: the channel's waiting writes may go on */
  | { type: 'WriteDone'; channel: string }
  /** a REQ's stored page (a Reason: refused by the read policy), or, without `sub`, a COUNT's store failure */
  | { type: 'ReadResult'; sub?: Subscription; outcome: Settled<Page | Reason> }
  /** the banned event ids (NIP-86 banevent) read from the store; writes wait for the first load */
  | { type: 'BannedEventsRead'; outcome: Settled<string[]> }
  /** forget connections that closed without a Disconnect, and writes that never came back (periodic) */
  | { type: 'Sweep' }
  /** move the agent connections along and reap the dead (periodic, agentOrphanScanSeconds; agent-connections.ts) */
  | { type: 'AgentScan' }
  /** publish a channel's relay-signed state now (deferred while a burst of changes was ahead of the clock) */
  | { type: 'PublishChannelState'; channel: string; what: StateWanted }

/**
 * How the results of a community's own I/O are offered again when it can't take them (pipeTo,
 * tellUntilTaken). A community that is down is respawned within 30 s (its kind supervisor's longest delay):
 * they are offered until then, with room to spare.
 */
export const REDELIVER = { everyMs: 500, forMs: 60_000 } as const
