// What the agent registry does with what its community saw (docs/agent-registry.md): an agent is tracked
// from its heartbeat (its stored announcement looked up, and offered again as its arrival) or from its
// announcement; it departs — a relay-signed kind 21990 — when the sweep finds its lease lapsed (`expired`)
// or when its goodbye has cleared the presence (`offline`). Every read runs beside the actor; the events to
// deliver go to the community, whose live feed and bus link serve them like any other.
import type { PresenceStore } from '../../infra/gates/presence.js'
import type { Logger } from '../../infra/log.js'
import type { Metrics } from '../../infra/metrics.js'
import type { EventStore } from '../../infra/store/event-store.js'
import { ANNOUNCEMENT_D, type DepartureStatus, departureTemplate, KIND_ANNOUNCEMENT } from '../../protocols/agent-registry.js'
import { asVerified, type NostrEvent, type VerifiedEvent } from '../../protocols/nip01/event.js'
import type { Filter } from '../../protocols/nip01/filter.js'
import type { EventTemplate } from '../../protocols/nip01/sign.js'
import { REDELIVER } from '../community/messages.js'
import { type ActorContext, pipeTo, type TypedRef, tell, tellUntilTaken } from '../kernel/index.js'
import type { Agents } from './agents.js'
import { liveLeases } from './lease-reads.js'
import type { RegistryAnnounce, RegistryMsg } from './messages.js'

export interface RegistryDeps {
  community: string
  presence: PresenceStore
  events: Pick<EventStore, 'query'>
  /** sign with the relay key: a departure is the relay's word */
  sign: (t: EventTemplate, createdAt: number) => NostrEvent
  /** the community actor that delivers what the registry announces (looked up per message) */
  communityRef: () => TypedRef<RegistryAnnounce> | undefined
  /**
   * The pubkeys whose presence a connection of this node holds: the community's holds, read here and never
   * changed. An agent held by no connection here is another node's to track. The community changes them
   * before this actor hears why (a goodbye gives its hold back, then tells Goodbye): see onLeasesChecked.
   */
  heldHere: () => Set<string>
  metrics: Pick<Metrics, 'agentsLive' | 'agentLeasesExpired'>
  log: Pick<Logger, 'warn'>
  nowSeconds: () => number
  /**
   * A 'checking' or 'leaving' entry older than this lost its answer (the registry gave up with it queued, a
   * read that never settles): the sweep forgets it. Forgetting early is safe, as a late answer for an entry no
   * longer in that state is ignored: it costs at most one more lookup at the next heartbeat.
   */
  transientMaxSeconds: number
  /** how often the tracked agents' leases are read (leaseSweepSeconds); default 30 s */
  leaseSweepMs?: number
}

export interface RegistryState {
  /** the tracked agents: they outlive a restart (registry-actor.ts) */
  agents: Agents
  /** a sweep's presence reads are in flight: the next tick waits for them */
  sweeping: boolean
}

type Ctx = ActorContext<RegistryMsg>
type Msg<T extends RegistryMsg['type']> = Extract<RegistryMsg, { type: T }>

/** A heartbeat recorded: an agent not tracked here yet is looked up (its stored announcement, AgentSeen). */
export function onHeartbeat(state: RegistryState, msg: Msg<'Heartbeat'>, ctx: Ctx, d: RegistryDeps): RegistryState {
  const { agents } = state
  const { pubkey } = msg
  if (agents.get(pubkey) !== undefined) return state
  agents.set(pubkey, 'checking', d.nowSeconds())
  const filter: Filter = { kinds: [KIND_ANNOUNCEMENT], authors: [pubkey], tags: { d: [ANNOUNCEMENT_D] }, limit: 1 }
  const found = d.events.query(d.community, [filter], { now: d.nowSeconds() }).then(([s]) => s)
  pipeTo(ctx.self, found, (o): RegistryMsg => ({ type: 'AgentSeen', pubkey, announcement: o.ok ? o.value : undefined, checked: o.ok }), {
    ...REDELIVER,
    // never answered: unknown again, so the next heartbeat asks again
    onGiveUp: () => forgetCheck(agents, pubkey),
  })
  return state
}

export const forgetCheck = (agents: Agents, pubkey: string) => {
  if (agents.get(pubkey) === 'checking') agents.delete(pubkey)
}

export function onAgentSeen(state: RegistryState, msg: Msg<'AgentSeen'>, d: RegistryDeps): RegistryState {
  const { agents } = state
  // decided meanwhile (its announcement arrived, it left): that answer is newer than this one
  if (agents.get(msg.pubkey) !== 'checking') return state
  // a failed lookup leaves it unknown: the next heartbeat asks again
  if (!msg.checked) {
    agents.delete(msg.pubkey)
    return state
  }
  const raced = agents.wasAnnouncedWhileChecking(msg.pubkey)
  agents.set(msg.pubkey, msg.announcement || raced ? 'agent' : 'none')
  // an announcement that took effect meanwhile was offered live then
  if (raced || !msg.announcement) return state
  // its arrival, as far as live subscribers can tell (the live feed checks the lease again, like every 31990)
  announce(d, asVerified(msg.announcement.event), msg.announcement.raw)
  return state
}

/** A 31990 took effect here: tracked as an agent once its lease is seen live (AgentAnnounced). */
export function onAnnounced(state: RegistryState, msg: Msg<'Announced'>, ctx: Ctx, d: RegistryDeps): RegistryState {
  const { pubkey } = msg
  state.agents.announced(pubkey)
  const live = d.presence.get(d.community, [pubkey]).then((m) => m.has(pubkey))
  pipeTo(ctx.self, live, (o): RegistryMsg => ({ type: 'AgentAnnounced', pubkey, live: o.ok && o.value }), REDELIVER)
  return state
}

export function onAgentAnnounced(state: RegistryState, msg: Msg<'AgentAnnounced'>): RegistryState {
  if (msg.live) state.agents.set(msg.pubkey, 'agent')
  return state
}

/** Every leaseSweepSeconds: the tracked agents' leases, read beside the actor (LeasesChecked). */
export function onLeaseSweep(state: RegistryState, ctx: Ctx, d: RegistryDeps): RegistryState {
  const { agents } = state
  const held = d.heldHere()
  // an entry without a lease here is somebody else's to track (another node's connection, or nobody's)
  for (const [pubkey, s] of agents.entries()) if (s === 'none' && !held.has(pubkey)) agents.delete(pubkey)
  // a check whose answer was lost is asked again at the next heartbeat; a goodbye whose answer was lost
  // leaves its agent to the sweep again (its lease is cleared or lapses)
  for (const [pubkey, s] of agents.stale(d.nowSeconds() - d.transientMaxSeconds)) {
    if (s === 'leaving') agents.set(pubkey, 'agent')
    else agents.delete(pubkey)
  }
  const tracked = agents.live()
  if (tracked.length === 0 || state.sweeping) return state
  state.sweeping = true
  pipeTo(
    ctx.self,
    liveLeases(d.presence, d.community, tracked),
    (o): RegistryMsg => ({ type: 'LeasesChecked', tracked, live: o.ok ? o.value : undefined }),
    {
      ...REDELIVER,
      onGiveUp: () => {
        state.sweeping = false
      },
    },
  )
  return state
}

/** The sweep's answer: an agent whose lease lapsed departs (`expired`); a failed read waits for the next sweep. */
export function onLeasesChecked(state: RegistryState, msg: Msg<'LeasesChecked'>, ctx: Ctx, d: RegistryDeps): RegistryState {
  state.sweeping = false
  const { live } = msg
  if (!live) return state
  const held = d.heldHere()
  const unheld: string[] = []
  for (const pubkey of msg.tracked) {
    if (state.agents.get(pubkey) !== 'agent') continue
    if (!live.has(pubkey)) {
      d.metrics.agentLeasesExpired.inc()
      depart(state.agents, pubkey, 'expired', d)
    } else if (!held.has(pubkey)) unheld.push(pubkey)
  }
  // Live, but held by no connection here: the node it heartbeats on tracks it. Decided behind what is queued
  // now: a goodbye gave its hold back before its Goodbye reached this mailbox, and its agent must depart
  // `offline`, not be dropped. A tell this actor cannot take is skipped: the next sweep finds them again.
  if (unheld.length > 0) tell(ctx.self, { type: 'Unheld', pubkeys: unheld })
  return state
}

export function onUnheld(state: RegistryState, msg: Msg<'Unheld'>, d: RegistryDeps): RegistryState {
  const held = d.heldHere()
  for (const pubkey of msg.pubkeys) if (state.agents.get(pubkey) === 'agent' && !held.has(pubkey)) state.agents.delete(pubkey)
  return state
}

/** A goodbye from `pubkey` is being cleared: an agent is left to it (one departure, `offline`), not to the sweep. */
export function onGoodbye(state: RegistryState, msg: Msg<'Goodbye'>, d: RegistryDeps): RegistryState {
  if (state.agents.get(msg.pubkey) === 'agent') state.agents.set(msg.pubkey, 'leaving', d.nowSeconds())
  return state
}

/** The goodbye's presence was cleared, or not: an agent still leaving departs, or is the sweep's again. */
export function onGoodbyeDone(state: RegistryState, msg: Msg<'GoodbyeDone'>, d: RegistryDeps): RegistryState {
  const { agents } = state
  const s = agents.get(msg.pubkey)
  if (!msg.cleared) {
    if (s === 'leaving') agents.set(msg.pubkey, 'agent')
    return state
  }
  // still leaving, or found since (its announcement came in while the store was cleared); an agent the sweep
  // departed meanwhile is not departed twice
  if (s === 'leaving' || s === 'agent') depart(agents, msg.pubkey, 'offline', d)
  else agents.delete(msg.pubkey)
  return state
}

/** The relay's 21990 for `pubkey`; signed before the agent is forgotten, so a signer that throws loses nobody. */
function depart(agents: Agents, pubkey: string, status: DepartureStatus, d: RegistryDeps): void {
  const event = asVerified(d.sign(departureTemplate(pubkey, status), d.nowSeconds()))
  agents.delete(pubkey)
  announce(d, event, JSON.stringify(event))
}

/**
 * The community delivers it here and publishes it to the other nodes. Offered again while the community
 * cannot take it (down until its respawn, or full); one it never takes (stopped) is logged.
 */
function announce(d: RegistryDeps, event: VerifiedEvent, raw: string): void {
  const lost = () =>
    d.log.warn({ community: d.community, kind: event.kind, eventId: event.id }, 'registry event not delivered: community unavailable')
  const ref = d.communityRef()
  if (ref === undefined) lost()
  else tellUntilTaken(ref, { type: 'Announce', events: [{ event, raw }], from: 'registry' }, { ...REDELIVER, onGiveUp: lost })
}
