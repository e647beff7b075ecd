// Builds what a community keeps across its restarts and respawns (CommunitySurvivors, community-state.ts,
// says what and why). Called once per community, before its actor is spawned.
import { StateGenerations } from '../../protocols/mesh/state-generation.js'
import { liveLeases } from '../registry/lease-reads.js'
import { AccessGate } from './access-gate.js'
import { AgentConnections } from './agent-connections.js'
import type { PresenceHolds } from './community-presence.js'
import type { CommunityDeps, CommunitySurvivors } from './community-state.js'
import { ControlReplayMemory } from './control-replay.js'
import { LiveFeed } from './live-feed.js'
import { ReadSlots } from './read-slots.js'
import { type ConnectionRegistry, SubscriptionIndex } from './subscription-index.js'
import { WriteOrder } from './write-order.js'

/** Writes held at once (behind a channel change, or before the banned ids are loaded); past it, `error:`. */
const MAX_HELD_WRITES = 10_000
/** Reads (REQ, COUNT) of one community running at once; the rest wait, each connection behind its own. */
const MAX_RUNNING_READS = 16
/** A connection's share of the running reads: a quarter, so one socket's burst leaves most places to the others. */
const MAX_RUNNING_READS_PER_CONNECTION = 4
const DEFAULT_MAX_HELD_LIVE_BYTES = 4 * 1024 * 1024

export function createCommunitySurvivors(deps: CommunityDeps): CommunitySurvivors {
  const id = deps.record.id
  const index = new SubscriptionIndex()
  const current = { record: deps.record, bannedEvents: new Set<string>(), bannedLoaded: false }
  const gate = new AccessGate({
    community: id,
    channels: deps.channels,
    record: () => current.record,
    allowedAmong: (pubkeys) => deps.communities.allowedAmong(id, pubkeys),
    ttlMs: deps.accessCacheTtlMs,
    nowMs: deps.nowMs,
  })
  return {
    index,
    conns: new Map() as ConnectionRegistry,
    presenceHolds: new Map() as PresenceHolds,
    agents: new AgentConnections({
      community: id,
      timing: deps.agents.timing,
      nowMs: deps.nowMs,
      wallMs: deps.agents.wallMs,
      metrics: deps.metrics,
      changed: deps.agents.changed,
    }),
    current,
    gate,
    feed: liveFeedOf(index, gate, deps),
    // A client that opens all its subscriptions at once has that many REQs waiting at most; one more waiting
    // is a socket replacing REQs or piling COUNTs faster than they are read. Connections are bounded (slots,
    // per IP), so the community's waiting reads are too.
    reads: new ReadSlots(MAX_RUNNING_READS, MAX_RUNNING_READS_PER_CONNECTION, deps.limits.maxSubscriptions),
    writes: new WriteOrder(MAX_HELD_WRITES),
    inflight: { effects: 0 },
    replays: new ControlReplayMemory(),
  }
}

function liveFeedOf(index: SubscriptionIndex, gate: AccessGate, deps: CommunityDeps): LiveFeed {
  const id = deps.record.id
  const generations = new StateGenerations(deps.communityPubkey)
  return new LiveFeed({
    community: id,
    stale: (event) => {
      if (!generations.stale(event)) return false
      deps.cluster.rejected('stale-state-generation')
      return true
    },
    gate,
    index,
    metrics: deps.metrics,
    counters: deps.counters,
    log: deps.log,
    // A 31990 goes live only while its author's lease is (the presence store decides, on every node). The
    // check is here, not in the agent registry: it waits in the feed's order, as an access lookup does, so
    // the events behind it keep theirs.
    leaseHeld: async (pubkey) => (await liveLeases(deps.presence.store, id, [pubkey])).has(pubkey),
    maxHeldBytes: deps.maxHeldLiveBytes ?? DEFAULT_MAX_HELD_LIVE_BYTES,
    nowMs: deps.nowMs,
  })
}
