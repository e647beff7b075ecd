// The types the parts of a community actor share: what it is given (CommunityDeps) and what it holds
// (CommunityState). They live here, apart from the actor, so that no part of it imports the actor back.
import type { Logger } from '../../infra/log.js'
import type { Metrics } from '../../infra/metrics.js'
import type { ChannelStore } from '../../infra/store/channel-store.js'
import type { CommunityRecord, CommunityStore } from '../../infra/store/community-store.js'
import type { EventStore } from '../../infra/store/event-store.js'
import type { Verifier } from '../../infra/verify/verifier.js'
import type { Limits } from '../../protocols/limits.js'
import type { NostrEvent, VerifiedEvent } from '../../protocols/nip01/event.js'
import type { EventTemplate } from '../../protocols/nip29.js'
import type { ActorContext, TypedRef } from '../kernel/index.js'
import type { RegistryMsg } from '../registry/messages.js'
import type { AccessGate } from './access-gate.js'
import type { ChannelDeps } from './community-channels.js'
import type { CommunityLink } from './community-link.js'
import type { PresenceDeps, PresenceHolds } from './community-presence.js'
import type { LiveFeed } from './live-feed.js'
import type { CommunityMsg, PublishOutcome } from './messages.js'
import type { ReadSlots } from './read-slots.js'
import type { RecentIds } from './recent-ids.js'
import type { ConnectionRegistry, SubscriptionIndex } from './subscription-index.js'
import type { WriteOrder } from './write-order.js'

/** What the community's cluster handlers need beyond the single-node ones. */
export interface ClusterDeps {
  link: CommunityLink
  verifier: Verifier
  relayPubkey: string
  nowSeconds: () => number
  log: { warn(o: object, m: string): void }
  rejected: (why: string) => void
  /** re-read the community list now (another node archived one) */
  revalidate: () => void
}

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
  /** `skipped` subscriptions were closed because an event could not be delivered (metric + supervision 'lagged') */
  lagged: (skipped: number) => void
  /** live events held for one subscription while its page is read (limits.maxPendingOutboundBytes) */
  maxHeldLiveBytes?: number
  /** how often connections that closed without a Disconnect are forgotten; default 10 s */
  sweepIntervalMs?: number
  /** this community's agent registry (src/actors/registry/): told of heartbeats, announcements and goodbyes */
  registry: TypedRef<RegistryMsg>
  /** the relay mesh (cluster mode, APIARY_MESH=on): channel changes are decided by each channel's owner node */
  mesh?: { moderate(community: string, channel: string, event: VerifiedEvent, raw: string): Promise<PublishOutcome> }
}

export interface CommunityState {
  index: SubscriptionIndex
  conns: ConnectionRegistry
  presenceHolds: PresenceHolds
  recent: RecentIds
  accepted: number
  /** the current record: replaced on RecordChanged, read by the access gate */
  current: { record: CommunityRecord; bannedEvents: Set<string>; bannedLoaded: boolean }
  gate: AccessGate
  channels: ChannelDeps
  writes: WriteOrder
  feed: LiveFeed
  reads: ReadSlots
  /** stores started whose effect is not handled yet (community-reads.ts: while any is, a page's ids are remembered) */
  inflight: { effects: number }
}

export type Ctx = ActorContext<CommunityMsg>
