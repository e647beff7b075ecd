// What a connection actor is given when its socket is admitted (the relay's gateway builds it), and the view
// of the connection it shares with its community. Its own module so the actor and the helpers that prepare
// and apply frames can all name it without importing one another.
import type { WebSocket } from 'ws'
import type { CommunityCounters } from '../../infra/console/community-counters.js'
import type { Logger } from '../../infra/log.js'
import type { Metrics } from '../../infra/metrics.js'
import type { Verifier } from '../../infra/verify/verifier.js'
import type { Limits } from '../../protocols/limits.js'
import type { OwnerAttestation } from '../../protocols/nip-oa.js'
import type { CommunityMsg } from '../community/messages.js'
import type { ConnView } from '../community/subscription-index.js'
import type { TypedRef } from '../kernel/index.js'
import type { AdmissionAnswer, LimitType } from '../principal/principal-actor.js'
import type { AuthSlots } from './auth-slots.js'

export interface MutableConnView extends ConnView {
  readonly authed: Set<string>
  readonly owners: Map<string, string>
  readonly subs: Set<string>
  /** the attestation each attested agent authenticated with: its `kind=` clauses bind every write */
  readonly attestations: Map<string, OwnerAttestation>
  /** attested agents whose owner the community knows (auth-standing.ts): charged at least agent-standard */
  readonly lifted: Set<string>
  /** keys nobody in the community knew at their AUTH → until when (monotonic ms) their EVENTs also spend the IP's budget */
  readonly freshUntilMs: Map<string, number>
}

export interface ConnectionDeps {
  view: MutableConnView
  ws: WebSocket
  ip: string
  /** NIP-42: the URL this client connected to (scheme + normalized host with non-default port) */
  relayUrl: string
  challenge: string
  community: { id: string; ref: TypedRef<CommunityMsg> }
  verifier: Verifier
  /** `attested`: an agent whose owner the community knows, charged to the agent-standard tier unless the roster says more */
  admit: (principal: string, limit: LimitType, attested: boolean) => Promise<AdmissionAnswer>
  /** an AUTH against its IP's budget on this node (rateLimits.authPerIp), before its signature is checked */
  admitAuth: () => Promise<AdmissionAnswer>
  /** those of `pubkeys` the community knows: its admins, its roster's agents, its allowed list (NIP-86 allowpubkey) */
  knownAmong: (pubkeys: readonly string[]) => Promise<Set<string>>
  /** the community's record names it now (an admin, a roster agent): a key rostered after its AUTH is fresh no more */
  named: (pubkey: string) => boolean
  /** the community's ban row for this pubkey, if any (architecture §8: checked at AUTH and at every write) */
  banOf: (pubkey: string) => Promise<{ reason: string } | undefined>
  limits: Limits
  /** limits.maxPubkeysPerConnection: an AUTH as one more pubkey is refused */
  maxPubkeysPerConnection: number
  /** rateLimits.freshKeySeconds, in ms: how long an unknown key's EVENTs also spend its IP's budget */
  freshKeyMs: number
  /** the edge's inbound bound (limits.maxInboundBytesInFlight): what sizes the mailbox */
  maxInboundBytesInFlight: number
  authRequired: boolean
  authWindowSeconds: number
  nowSeconds: () => number
  metrics: Metrics
  /** the console's counts of this community's accepted events and refusals (infra/console/community-counters.ts) */
  counters?: CommunityCounters
  log: Logger
  /** tells the edge how many subscriptions are open (an idle socket with subscriptions is not idle) */
  onSubscriptionCount: (n: number) => void
  /** a frame's bytes no longer count against the connection's inbound bound (the edge resumes reading) */
  release: (bytes: number) => void
  /** this node's AUTH verifications in flight (limits.maxConcurrentAuth) */
  authSlots: AuthSlots
  /** when the socket opened (monotonic ms): the handshake lasts until the first AUTH answered OK true */
  openedAtMs: number
  nowMs: () => number
}
