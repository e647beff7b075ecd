// The types the parts of a community actor share: what it is given (CommunityDeps), what it keeps across
// restarts (CommunitySurvivors) and its state. Apart from the actor, so that no part of it imports the actor.

import type { Config } from '../../infra/config-types.js'
import type { CommunityCounters } from '../../infra/console/community-counters.js'
import type { Logger } from '../../infra/log.js'
import type { Metrics } from '../../infra/metrics.js'
import type { ChannelStore } from '../../infra/store/channel-store.js'
import type { CommunityRecord, CommunityStore } from '../../infra/store/community-store.js'
import type { EventStore } from '../../infra/store/event-store.js'
import type { InviteStore } from '../../infra/store/invite-store.js'
import type { Verifier } from '../../infra/verify/verifier.js'
import type { AgentTiming } from '../../protocols/agent-connection-state.js'
import type { Limits } from '../../protocols/limits.js'
import type { ForwardedAuth } from '../../protocols/mesh/session-frames.js'
import type { NostrEvent, VerifiedEvent } from '../../protocols/nip01/event.js'
import type { EventTemplate } from '../../protocols/nip01/sign.js'
import type { CommunityJobs } from '../jobs/community-jobs.js'
import type { ActorContext, TypedRef } from '../kernel/index.js'
import type { RegistryMsg } from '../registry/messages.js'
import type { AccessGate } from './access-gate.js'
import type { AgentConnections, AgentConnectionsDeps } from './agent-connections.js'
import type { ChannelDeps, DeferredState } from './community-channels.js'
import type { CommunityLink } from './community-link.js'
import type { PresenceDeps, PresenceHolds } from './community-presence.js'
import type { ControlReplayMemory } from './control-replay.js'
import type { LiveFeed } from './live-feed.js'
import type { MemberList } from './member-list.js'
import type { CommunityMsg, PublishOutcome } from './messages.js'
import type { ReadSlots } from './read-slots.js'
import type { RecentIds } from './recent-ids.js'
import type { ConnectionRegistry, SubscriptionIndex } from './subscription-index.js'
import type { WriteOrder } from './write-order.js'

/** What the community's cluster handlers need beyond the single-node ones. */
export interface ClusterDeps {
  link: CommunityLink
  verifier: Verifier
  /** the relay key every node shares: it signs the control payloads between them */
  relayPubkey: string
  nowSeconds: () => number
  log: { warn(o: object, m: string): void }
  rejected: (why: string) => void
  /** re-read the community list now (another node archived one) */
  revalidate: () => void
  /** drop this node's copy of the community's blocked IPs (a blockip or unblockip on another node, or one lost) */
  blockListChanged: () => void
}

export interface CommunityDeps {
  record: CommunityRecord
  store: EventStore
  channels: ChannelStore
  communities: Pick<CommunityStore, 'allowedAmong' | 'bannedAmong' | 'listBannedEvents' | 'listAllowedPubkeys' | 'disallowPubkey'>
  /** NIP-43 invite codes: made for a 28935 request, used by a 28934 join */
  invites: Pick<InviteStore, 'create' | 'redeem'>
  /** the key the relay signs for this community with (infra/community-key.ts): NIP-11 `self` on its hosts */
  communityPubkey: string
  /** keys that signed for it before (CommunityKeys.formerOf): their channel state is signed again on start (state-rekey.ts) */
  formerPubkeys: readonly string[]
  /** sign with the community's key (channel state 39000–39005, the relay's answers to joins and leaves, departures, NIP-43's lists) */
  sign: (t: EventTemplate, createdAt: number) => NostrEvent
  /** the relay-wide AUTH requirement (each community may add its own) */
  authRequired: boolean
  /** how long a membership answer is reused: what bounds a lost invalidation broadcast */
  accessCacheTtlMs: number
  limits: Limits
  /** NIP-29 `previous` window and late publication (config `channels`) */
  channelRules: Config['channels']
  nowSeconds: () => number
  nowMs: () => number
  metrics: Metrics
  /** the console's counts of this community's deliveries (infra/console/community-counters.ts) */
  counters?: CommunityCounters
  log: Logger
  cluster: ClusterDeps
  presence: PresenceDeps
  /** `skipped` subscriptions were closed because an event could not be delivered (metric + supervision 'lagged') */
  lagged: (skipped: number) => void
  /** live events held for one subscription while its page is read (limits.maxPendingOutboundBytes) */
  maxHeldLiveBytes?: number
  /** how often connections that closed without a Disconnect are forgotten; default 10 s */
  sweepIntervalMs?: number
  /** agent connection states (agent-connections.ts): the thresholds, the scan's interval, the wall clock rows show */
  agents: { timing: AgentTiming; scanIntervalMs: number; wallMs: () => number; changed?: AgentConnectionsDeps['changed'] }
  /** job dispatch (docs/jobs.md): undefined on a store without a jobs table, where dispatch requests are refused */
  jobs?: CommunityJobs
  /** this community's agent registry (src/actors/registry/), told of heartbeats, announcements and goodbyes; looked up per message */
  registry: () => TypedRef<RegistryMsg> | undefined
  /** the relay mesh (cluster mode, APIARY_MESH=on): channel changes are decided by each channel's owner node */
  mesh?: {
    moderate(community: string, channel: string, event: VerifiedEvent, raw: string, auth: ForwardedAuth): Promise<PublishOutcome>
  }
}

/**
 * What a community keeps across its restarts and respawns, and why; `init` builds everything else afresh.
 * Created once, beside the actor's def (community-survivors.ts, by the composition root: the agent registry
 * reads the presence holds).
 */
export interface CommunitySurvivors {
  /** the live subscriptions: their connections still believe they are subscribed and must not silently miss events */
  index: SubscriptionIndex
  /** the connections here: a ban or an archive must reach every one, whatever happened to the actor */
  conns: ConnectionRegistry
  /** who holds which presence here: a hold forgotten would never be released (a presence count leaked) */
  presenceHolds: PresenceHolds
  /** the agent connections and when each last heartbeat: a restart must not give a silent one a fresh start */
  agents: AgentConnections
  /** the current record (replaced on RecordChanged: a restart must not fall back to the one spawned with) and the banned ids */
  current: { record: CommunityRecord; bannedEvents: Set<string>; bannedLoaded: boolean }
  /** the access gate the live feed decides with; its caches are bounded by their TTL and the invalidations, not by crashes */
  gate: AccessGate
  /** live delivery in order: events waiting behind a lookup when the actor crashed are still delivered, in order */
  feed: LiveFeed
  /** reads in flight keep their slot until they settle, crash or not: fresh slots would let a restart exceed the bound */
  reads: ReadSlots
  /** a channel change in flight across a crash still holds its channel; the first banned-ids load still gates every write */
  writes: WriteOrder
  /**
   * stores started whose effect is not handled yet (community-reads.ts: while any is, a page's ids are
   * remembered); their results come back to the restarted actor, which counts them down
   */
  inflight: { effects: number }
  /** conn-control payloads applied here: a replay must not act twice because the actor restarted in between */
  replays: ControlReplayMemory
}

export interface CommunityState extends CommunitySurvivors {
  /** the inbound duplicate guard: a fresh one only sends more resends on to the store, which decides */
  recent: RecentIds
  accepted: number
  /** how its NIP-29 channel changes reach the stores */
  channels: ChannelDeps
  /** channel state waiting for the clock */
  deferred: DeferredState
  /** the NIP-43 member list (13534), republished beside the actor; one for the def, kept across restarts */
  memberList: MemberList
}

export type Ctx = ActorContext<CommunityMsg>
