// The agent registry (docs/agent-registry.md): a kind 31990 announcement is served — REQ, COUNT, live — only
// while its author's presence lease is live, and a live subscriber hears when an agent leaves (a relay-signed
// kind 21990: `expired` when the sweep finds its lease lapsed, `offline` on its goodbye). The presence store
// is the truth about leases, in a cluster too; every read of it runs beside the actor (DESIGN §3).
//
// What the actor keeps (`Agents`, outside its state so a restart forgets nobody): the pubkeys seen here
// with a live lease and an announcement ('agent'), the ones checked and found without one ('none'), the
// ones being checked, and agents whose goodbye is being cleared ('leaving': the sweep leaves them to the
// goodbye, so one goodbye makes one departure). Only 'agent' and 'leaving' entries can depart. An agent is
// tracked by the node it heartbeats on; one heartbeating on two nodes may get a departure from each.
import type { PresenceStore } from '../../infra/gates/presence.js'
import type { Metrics } from '../../infra/metrics.js'
import type { EventStore, StoredEvent } from '../../infra/store/event-store.js'
import {
  ANNOUNCEMENT_D,
  announcementFiltersOf,
  canMatchAnnouncements,
  type DepartureStatus,
  departureTemplate,
  KIND_ANNOUNCEMENT,
} from '../../protocols/agent-registry.js'
import { asVerified, type NostrEvent } from '../../protocols/nip01/event.js'
import type { Filter } from '../../protocols/nip01/filter.js'
import type { EventTemplate } from '../../protocols/nip01/sign.js'
import { type ActorContext, pipeTo } from '../kernel/index.js'
import type { LiveFeed } from './live-feed.js'
import { type CommunityMsg, REDELIVER } from './messages.js'

type Ctx = ActorContext<CommunityMsg>
type AgentState = 'agent' | 'none' | 'checking' | 'leaving'

export interface RegistryDeps {
  community: string
  presence: PresenceStore
  events: Pick<EventStore, 'query'>
  sign: (t: EventTemplate, createdAt: number) => NostrEvent
  publishEvent: (raw: string) => void
  metrics: Pick<Metrics, 'agentsLive' | 'agentLeasesExpired'>
  nowSeconds: () => number
  /**
   * A 'checking' or 'leaving' entry older than this lost its answer (the community gave up with it queued, a
   * read that never settles): the sweep forgets it. Forgetting early is safe, as a late answer for an entry no
   * longer in that state is ignored: it costs at most one more lookup at the next heartbeat.
   */
  transientMaxSeconds: number
}

/** Pubkeys read from the presence store per round trip (one MGET in Redis). */
const LEASE_BATCH = 500
const PIPE = REDELIVER

export class Agents {
  private readonly byPubkey = new Map<string, AgentState>()
  /** checked pubkeys whose announcement took effect meanwhile: it went live then, its lookup must not resend it */
  private readonly announcedWhileChecking = new Set<string>()
  /** when a 'checking' or 'leaving' entry began (seconds) */
  private readonly sinceSeconds = new Map<string, number>()
  /** a sweep's presence reads are in flight: the next tick waits for them */
  sweeping = false

  constructor(private readonly gauge: Pick<Metrics, 'agentsLive'>['agentsLive']) {}

  get(pubkey: string): AgentState | undefined {
    return this.byPubkey.get(pubkey)
  }

  /** `nowSeconds`: when a 'checking' or 'leaving' entry begins (the sweep forgets it past transientMaxSeconds) */
  set(pubkey: string, next: AgentState, nowSeconds = 0): void {
    const was = this.byPubkey.get(pubkey)
    if (next !== 'checking') this.announcedWhileChecking.delete(pubkey)
    if (was === next) return
    if (next === 'checking' || next === 'leaving') this.sinceSeconds.set(pubkey, nowSeconds)
    else this.sinceSeconds.delete(pubkey)
    this.byPubkey.set(pubkey, next)
    if (next === 'agent') this.gauge.inc()
    else if (was === 'agent') this.gauge.dec()
  }

  /** an announcement of `pubkey` took effect (and was offered live) */
  announced(pubkey: string): void {
    if (this.byPubkey.get(pubkey) === 'checking') this.announcedWhileChecking.add(pubkey)
  }

  /** its lookup raced its announcement, which was offered live already */
  wasAnnouncedWhileChecking(pubkey: string): boolean {
    return this.announcedWhileChecking.has(pubkey)
  }

  /** true when it was an agent (whose departure is due) */
  delete(pubkey: string): boolean {
    const was = this.byPubkey.get(pubkey)
    this.byPubkey.delete(pubkey)
    this.announcedWhileChecking.delete(pubkey)
    this.sinceSeconds.delete(pubkey)
    if (was === 'agent') this.gauge.dec()
    return was === 'agent'
  }

  /** 'checking' and 'leaving' entries begun before `beforeSeconds`: their answer is not coming */
  stale(beforeSeconds: number): [string, AgentState][] {
    return [...this.sinceSeconds].filter(([, t]) => t < beforeSeconds).map(([p]) => [p, this.byPubkey.get(p) as AgentState])
  }

  /** the community stopped (archived, or the node closing): its agents no longer count on this node */
  clear(): void {
    for (const pubkey of [...this.byPubkey.keys()]) this.delete(pubkey)
  }

  live(): string[] {
    return [...this.byPubkey].filter(([, s]) => s === 'agent').map(([p]) => p)
  }

  entries(): IterableIterator<[string, AgentState]> {
    return this.byPubkey.entries()
  }
}

/**
 * Beside the actor: the live leases among `pubkeys` (one read per LEASE_BATCH pubkeys). Between reads it
 * yields to the event loop: the in-memory store answers at once, and 3,000 leases read in one turn held the
 * loop ~18 ms every sweep (a CPU profile of a relay holding 3,000 agents), in the way of every handshake.
 */
export async function liveLeases(store: PresenceStore, community: string, pubkeys: readonly string[]): Promise<Set<string>> {
  const live = new Set<string>()
  for (let i = 0; i < pubkeys.length; i += LEASE_BATCH) {
    if (i > 0) await new Promise((resolve) => setImmediate(resolve))
    for (const p of (await store.get(community, pubkeys.slice(i, i + LEASE_BATCH))).keys()) live.add(p)
  }
  return live
}

/** Beside the actor: a page without the announcements whose author holds no lease now. */
export async function dropLapsed(stored: StoredEvent[], store: PresenceStore, community: string): Promise<StoredEvent[]> {
  // `kind` is the row's: only announcements are parsed (a page's events are parsed lazily, if ever)
  const authors = [...new Set(stored.filter((s) => s.kind === KIND_ANNOUNCEMENT).map((s) => s.event.pubkey))]
  if (authors.length === 0) return stored
  const live = await liveLeases(store, community, authors)
  return stored.filter((s) => s.kind !== KIND_ANNOUNCEMENT || live.has(s.event.pubkey))
}

type Read = (filters: Filter[]) => Promise<StoredEvent[]>

/**
 * Beside the actor: a REQ's page served lease-aware. Lapsed announcements must not take a place in a filter's
 * `limit` (a `discover` behind many dead agents would get an empty page): the common case is one query, as
 * before; only when the page lost announcements are the filters that can match 31990 read again one by one,
 * each over-fetching (×8 a round) until its page is full, the store has no more, or `scanMaxEvents` rows
 * were read (a bound on one REQ's cost). Newest first, ties by lowest id (NIP-01), one copy per event.
 */
export async function readLeaseAware(
  filters: Filter[],
  read: Read,
  store: PresenceStore,
  community: string,
  scanMaxEvents: number,
): Promise<StoredEvent[]> {
  const page = await read(filters)
  const kept = await dropLapsed(page, store, community)
  if (kept.length === page.length) return kept
  const others = filters.filter((f) => !canMatch(f))
  const parts = await Promise.all([
    others.length > 0 ? read(others) : Promise.resolve([]),
    ...filters.filter(canMatch).map((f) => fillPage(f, read, store, community, scanMaxEvents)),
  ])
  const byId = new Map<string, StoredEvent>()
  for (const part of parts) for (const s of part) byId.set(s.id, s)
  return [...byId.values()].sort((a, b) => b.event.created_at - a.event.created_at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
}

const canMatch = (f: Filter) => canMatchAnnouncements([f])
const OVERFETCH_FACTOR = 8

/** One filter's page of at most its `limit` (set by the caller) events, lapsed announcements not counted. */
async function fillPage(f: Filter, read: Read, store: PresenceStore, community: string, scanMaxEvents: number): Promise<StoredEvent[]> {
  const limit = f.limit ?? scanMaxEvents
  for (let scan = limit; ; scan = Math.min(scan * OVERFETCH_FACTOR, scanMaxEvents)) {
    const page = await read([{ ...f, limit: scan }])
    const kept = await dropLapsed(page, store, community)
    if (kept.length >= limit || page.length < scan || scan >= scanMaxEvents) return kept.slice(0, limit)
  }
}

/**
 * Beside the actor: how many of a COUNT's announcements must not be counted (their author holds no lease).
 * A filter without a `limit` counts everything: its announcements are read up to `scanMaxEvents`, the same
 * bound as a REQ's over-fetch, so the answer is exact while no more stored announcements than that match. With
 * a `limit`, the announcements are those of the narrowed filter's page, which can differ from those in the
 * original filter's page (documented in docs/agent-registry.md).
 */
export async function lapsedAnnouncements(
  filters: Filter[],
  read: Read,
  store: PresenceStore,
  community: string,
  scanMaxEvents: number,
): Promise<number> {
  const narrowed = announcementFiltersOf(filters).map((f) => ({ ...f, limit: Math.min(f.limit ?? scanMaxEvents, scanMaxEvents) }))
  const announcements = await read(narrowed)
  if (announcements.length === 0) return 0
  return announcements.length - (await dropLapsed(announcements, store, community)).length
}

/**
 * A heartbeat recorded for `pubkey`: an agent not tracked here yet is looked up (its stored announcement),
 * and if it has one, that announcement is offered live again as its arrival (AgentSeen).
 */
export function noteHeartbeat(agents: Agents, pubkey: string, ctx: Ctx, d: RegistryDeps): void {
  if (agents.get(pubkey) !== undefined) return
  agents.set(pubkey, 'checking', d.nowSeconds())
  const filter: Filter = { kinds: [KIND_ANNOUNCEMENT], authors: [pubkey], tags: { d: [ANNOUNCEMENT_D] }, limit: 1 }
  const found = d.events.query(d.community, [filter], { now: d.nowSeconds() }).then(([s]) => s)
  pipeTo(ctx.self, found, (o): CommunityMsg => ({ type: 'AgentSeen', pubkey, announcement: o.ok ? o.value : undefined, checked: o.ok }), {
    ...PIPE,
    // never answered: unknown again, so the next heartbeat asks again
    onGiveUp: () => {
      if (agents.get(pubkey) === 'checking') agents.delete(pubkey)
    },
  })
}

export function onAgentSeen(agents: Agents, msg: Extract<CommunityMsg, { type: 'AgentSeen' }>, feed: LiveFeed, d: RegistryDeps): void {
  // decided meanwhile (its announcement arrived, it left): that answer is newer than this one
  if (agents.get(msg.pubkey) !== 'checking') return
  // a failed lookup leaves it unknown: the next heartbeat asks again
  if (!msg.checked) {
    agents.delete(msg.pubkey)
    return
  }
  const raced = agents.wasAnnouncedWhileChecking(msg.pubkey)
  agents.set(msg.pubkey, msg.announcement || raced ? 'agent' : 'none')
  // an announcement that took effect meanwhile was offered live then
  if (raced || !msg.announcement) return
  // its arrival, as far as live subscribers can tell (the feed checks the lease again, like every 31990)
  feed.offer(asVerified(msg.announcement.event), msg.announcement.raw)
  d.publishEvent(msg.announcement.raw)
}

/** A 31990 took effect here: tracked as an agent once its lease is seen live (AgentAnnounced). */
export function noteAnnouncement(agents: Agents, event: NostrEvent, ctx: Ctx, d: RegistryDeps): void {
  agents.announced(event.pubkey)
  const live = d.presence.get(d.community, [event.pubkey]).then((m) => m.has(event.pubkey))
  pipeTo(ctx.self, live, (o): CommunityMsg => ({ type: 'AgentAnnounced', pubkey: event.pubkey, live: o.ok && o.value }), PIPE)
}

export function onAgentAnnounced(agents: Agents, msg: Extract<CommunityMsg, { type: 'AgentAnnounced' }>): void {
  if (msg.live) agents.set(msg.pubkey, 'agent')
}

/** Every leaseSweepSeconds: the tracked agents' leases, read beside the actor (LeasesChecked). */
export function onLeaseSweep(agents: Agents, held: Set<string>, ctx: Ctx, d: RegistryDeps): void {
  // an entry without a lease here is somebody else's to track (another node's connection, or nobody's)
  for (const [pubkey, s] of agents.entries()) if (s === 'none' && !held.has(pubkey)) agents.delete(pubkey)
  // a check whose answer was lost is asked again at the next heartbeat; a goodbye whose answer was lost
  // leaves its agent to the sweep again (its lease is cleared or lapses)
  for (const [pubkey, s] of agents.stale(d.nowSeconds() - d.transientMaxSeconds)) {
    if (s === 'leaving') agents.set(pubkey, 'agent')
    else agents.delete(pubkey)
  }
  const tracked = agents.live()
  if (tracked.length === 0 || agents.sweeping) return
  agents.sweeping = true
  pipeTo(
    ctx.self,
    liveLeases(d.presence, d.community, tracked),
    (o): CommunityMsg => ({ type: 'LeasesChecked', tracked, live: o.ok ? o.value : undefined }),
    {
      ...PIPE,
      onGiveUp: () => {
        agents.sweeping = false
      },
    },
  )
}

/** The sweep's answer: an agent whose lease lapsed departs (`expired`); a failed read waits for the next sweep. */
export function onLeasesChecked(
  agents: Agents,
  msg: Extract<CommunityMsg, { type: 'LeasesChecked' }>,
  held: Set<string>,
  feed: LiveFeed,
  d: RegistryDeps,
): void {
  agents.sweeping = false
  const { live } = msg
  if (!live) return
  for (const pubkey of msg.tracked) {
    if (agents.get(pubkey) !== 'agent') continue
    if (live.has(pubkey)) {
      // live, but held by no connection here: the node it heartbeats on tracks it
      if (!held.has(pubkey)) agents.delete(pubkey)
      continue
    }
    d.metrics.agentLeasesExpired.inc()
    depart(agents, pubkey, 'expired', feed, d)
  }
}

/** A goodbye from `pubkey` is being cleared: an agent is left to it (one departure, `offline`), not to the sweep. */
export function noteBye(agents: Agents, pubkey: string, d: RegistryDeps): void {
  if (agents.get(pubkey) === 'agent') agents.set(pubkey, 'leaving', d.nowSeconds())
}

/** The goodbye's presence was cleared (`cleared`), or not: an agent still leaving departs, or is the sweep's again. */
export function onByeCleared(agents: Agents, pubkey: string, cleared: boolean, feed: LiveFeed, d: RegistryDeps): void {
  const s = agents.get(pubkey)
  if (!cleared) {
    if (s === 'leaving') agents.set(pubkey, 'agent')
    return
  }
  // still leaving, or found since (its announcement came in while the store was cleared); an agent the sweep
  // departed meanwhile is not departed twice
  if (s === 'leaving' || s === 'agent') depart(agents, pubkey, 'offline', feed, d)
  else agents.delete(pubkey)
}

/** The relay's 21990 for `pubkey`, delivered here and to the other nodes. */
export function depart(agents: Agents, pubkey: string, status: DepartureStatus, feed: LiveFeed, d: RegistryDeps): void {
  agents.delete(pubkey)
  const event = asVerified(d.sign(departureTemplate(pubkey, status), d.nowSeconds()))
  const raw = JSON.stringify(event)
  feed.offer(event, raw)
  d.publishEvent(raw)
}

/** The pubkeys whose presence a connection of this node holds. */
export function heldHere(holds: Map<string, Set<string>>): Set<string> {
  const out = new Set<string>()
  for (const pubkeys of holds.values()) for (const p of pubkeys) out.add(p)
  return out
}
