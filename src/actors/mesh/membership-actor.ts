// State: this node's membership view (gossip), a phi-accrual detector per linked peer, the local-pause guard,
// and what the readiness registry last listed. Messages: Tick (every gossip interval: gossip to each linked
// peer, judge suspicion), Reconcile (every 5 s: list the registry, give each peer that should be linked a link
// actor and stop those of peers that left, refresh our own record every 15 s), Listed / Published (that I/O's
// results), Control (a peer's gossip frame), LinkUp / LinkDown, Drain. Policy: permanent with backoff, never
// giving up: the view is rebuilt by the next exchanges, and the link actors live on beside it (peer-links.ts).
// Membership and suspicion are hints for routing only; the lease and its generation decide ownership.
import type { Tunnel } from '../../infra/mesh/tunnel.js'
import { FrameType } from '../../protocols/mesh/frames.js'
import { createMembershipView, type MembershipView, parseGossip } from '../../protocols/mesh/gossip.js'
import { createLocalPauseGuard, isSuspect, type LocalPauseGuard } from '../../protocols/mesh/local-pause.js'
import { createPhiAccrual, type PhiAccrual } from '../../protocols/mesh/phi-accrual.js'
import type { ReadinessRecord } from '../../protocols/mesh/readiness.js'
import { type ActorDef, type Kernel, pipeTo, type Settled, type TypedRef, tell } from '../kernel/index.js'
import { linkCandidates } from './link-candidates.js'
import type { PeerDeps } from './peer-actor.js'
import { createPeerLinks, type PeerLinks } from './peer-links.js'

export type MembershipMsg =
  | { type: 'Tick' }
  | { type: 'Judge' }
  | { type: 'Reconcile' }
  | { type: 'Listed'; outcome: Settled<ReadinessRecord[]> }
  | { type: 'Published'; outcome: Settled<void> }
  | { type: 'Control'; peer: string; ping: boolean; payload: unknown }
  | { type: 'LinkUp'; peer: string }
  | { type: 'LinkDown'; peer: string; draining: boolean }
  | { type: 'Drain'; done: () => void }

/** One peer as /mesh/status shows it: written by the membership actor, read beside it. */
export type PeerView = { runtime: string; endpoint: string; phi: number; suspect: boolean; connected: boolean }

export interface MembershipDeps {
  self: string
  endpoint: string
  gossipIntervalMs: number
  /** a Ping to every linked peer this often: the heartbeat its detector follows */
  heartbeatIntervalMs: number
  reconcileIntervalMs: number
  readinessRefreshMs: number
  links: Map<string, Tunnel>
  peers: Map<string, PeerView>
  /** readiness records that pass their checks (registry.list) */
  listReady(): Promise<ReadinessRecord[]>
  /** sign and write our own record; false to skip while the node is not ready */
  publishReady(fields: { load: number; draining: boolean }): Promise<void> | undefined
  load(): number
  /** the longest event-loop delay since the last call, ms (monitorEventLoopDelay; reset by the read) */
  loopDelayMaxMs(): number
  peerDeps: Omit<PeerDeps, 'linkUp' | 'linkDown' | 'endpointOf'>
  /** a peer became suspect or was heard again (sessions owned there may be taken over once their lease lapses) */
  suspicionChanged(peer: string, suspect: boolean): void
  now(): number
  log: { info(o: object, m: string): void; warn(o: object, m: string): void; debug(o: object, m: string): void }
}

interface MembershipState {
  view: MembershipView
  detectors: Map<string, PhiAccrual>
  guard: LocalPauseGuard
  suspects: Set<string>
  draining: boolean
  lastTickMs: number
  lastPublishMs: number
  lastPingMs: number
  listing: boolean
}

export const MEMBERSHIP_PATH = 'mesh/membership'
const PIPE = { everyMs: 100, forMs: 10_000 } as const

export interface Membership {
  readonly ref: TypedRef<MembershipMsg>
  /** hands a tunnel a peer dialed to that peer's link actor */
  accept(tunnel: Tunnel): void
}

export function spawnMembership(kernel: Kernel, deps: MembershipDeps): Membership {
  let tick: NodeJS.Timeout | undefined
  let reconcile: NodeJS.Timeout | undefined
  let judging: NodeJS.Timeout | undefined
  let self: TypedRef<MembershipMsg> | undefined
  const links: PeerLinks = createPeerLinks(kernel, {
    ...deps.peerDeps,
    endpointOf: (peer) => deps.peers.get(peer)?.endpoint,
    linkUp: (peer) => self && tell(self, { type: 'LinkUp', peer }),
    linkDown: (peer, end) => self && tell(self, { type: 'LinkDown', peer, draining: end.reason === 'draining' }),
  })

  const def: ActorDef<MembershipState, MembershipMsg> = {
    kind: 'mesh-membership',
    supervisor: 'node',
    policy: { mode: 'permanent', backoff: { minMs: 1_000, maxMs: 30_000, jitter: 0.2 }, maxRestarts: Number.MAX_SAFE_INTEGER },
    init: (ctx) => {
      clearInterval(tick)
      clearInterval(reconcile)
      clearInterval(judging)
      tick = setInterval(() => tell(ctx.self, { type: 'Tick' }), deps.gossipIntervalMs)
      // each Judge pings every peer (the heartbeat) and judges suspicion: twice per heartbeat interval, so a dead
      // peer is named within half an interval of its phi crossing 8
      judging = setInterval(() => tell(ctx.self, { type: 'Judge' }), deps.heartbeatIntervalMs / 2)
      reconcile = setInterval(() => tell(ctx.self, { type: 'Reconcile' }), deps.reconcileIntervalMs)
      tell(ctx.self, { type: 'Reconcile' })
      const view = createMembershipView({ runtime: deps.self, endpoint: deps.endpoint, version: 0, draining: false, load: deps.load() })
      return {
        view,
        detectors: new Map(),
        guard: createLocalPauseGuard(),
        suspects: new Set(),
        draining: false,
        lastTickMs: deps.now(),
        lastPublishMs: -Infinity,
        lastPingMs: -Infinity,
        listing: false,
      }
    },
    handle: (state, msg, ctx) => {
      const now = deps.now()
      switch (msg.type) {
        case 'Tick': {
          // our own stall first (Cassandra's rule): a tick this late, or a loop this delayed, means the silence we see is ours
          state.guard.notePause(now, now - state.lastTickMs - deps.gossipIntervalMs)
          state.lastTickMs = now
          observePause(state, now)
          state.view.bumpSelf({ load: deps.load(), draining: state.draining })
          const digest = state.view.digest()
          for (const [peer, tunnel] of deps.links)
            tunnel.sendControl(FrameType.Gossip, digest) || deps.log.debug({ peer }, 'gossip dropped: peer not reading')
          judge(state, now)
          return state
        }
        case 'Judge':
          observePause(state, now)
          if (now - state.lastPingMs >= deps.heartbeatIntervalMs - 50) {
            state.lastPingMs = now
            for (const tunnel of deps.links.values()) tunnel.sendControl(FrameType.Ping, {})
          }
          judge(state, now)
          return state
        case 'Reconcile': {
          if (!state.listing) {
            state.listing = true
            pipeTo(ctx.self, deps.listReady(), (o): MembershipMsg => ({ type: 'Listed', outcome: o }), PIPE)
          }
          if (now - state.lastPublishMs >= deps.readinessRefreshMs) {
            const published = deps.publishReady({ load: deps.load(), draining: state.draining })
            if (published) {
              state.lastPublishMs = now
              pipeTo(ctx.self, published, (o): MembershipMsg => ({ type: 'Published', outcome: o }), PIPE)
            }
          }
          return state
        }
        case 'Listed': {
          state.listing = false
          if (!msg.outcome.ok) {
            deps.log.warn({ err: msg.outcome.error }, 'mesh readiness registry unavailable')
            return state
          }
          onListed(state, msg.outcome.value)
          return state
        }
        case 'Published':
          if (!msg.outcome.ok) {
            state.lastPublishMs = -Infinity
            deps.log.warn({ err: msg.outcome.error }, 'mesh readiness record not written')
          }
          return state
        case 'Control':
          if (msg.ping) onPing(state, msg.peer, now)
          else onGossip(state, msg.peer, msg.payload, now)
          return state
        case 'LinkUp': {
          const detector = state.detectors.get(msg.peer) ?? createPhiAccrual({ firstHeartbeatEstimateMs: deps.heartbeatIntervalMs })
          state.detectors.set(msg.peer, detector)
          detector.heartbeat(now)
          deps.links.get(msg.peer)?.sendControl(FrameType.Gossip, state.view.digest())
          refreshView(state, msg.peer, now)
          return state
        }
        case 'LinkDown':
          if (msg.draining) {
            state.view.remove(msg.peer)
            links.stop(msg.peer)
          }
          refreshView(state, msg.peer, now)
          return state
        case 'Drain':
          state.draining = true
          state.view.bumpSelf({ draining: true })
          for (const tunnel of deps.links.values())
            tunnel.sendControl(FrameType.Gossip, { type: 'delta', from: deps.self, states: [state.view.self()], want: [] })
          Promise.resolve(deps.publishReady({ load: deps.load(), draining: true })).then(msg.done, msg.done)
          return state
      }
    },
    afterStop: () => {
      clearInterval(tick)
      clearInterval(reconcile)
      clearInterval(judging)
    },
  }

  /**
   * A peer leaves when it drains, or when neither the registry nor gossip vouches for it any more and no link
   * to it is up (a live link is evidence enough): its link actor stops and dials no more.
   */
  function onListed(state: MembershipState, records: ReadinessRecord[]) {
    const { wanted, draining } = linkCandidates(deps.self, state.view.members(), state.suspects, records)
    for (const [peer, endpoint] of wanted) {
      const known = deps.peers.get(peer)
      deps.peers.set(peer, {
        runtime: peer,
        endpoint,
        phi: known?.phi ?? 0,
        suspect: known?.suspect ?? false,
        connected: deps.links.has(peer),
      })
    }
    for (const peer of links.peers()) if (draining.has(peer) || (!wanted.has(peer) && !deps.links.has(peer))) links.stop(peer)
    if (state.draining) return
    for (const peer of wanted.keys()) links.ensure(peer)
  }

  function observePause(state: MembershipState, now: number) {
    state.guard.notePause(now, deps.loopDelayMaxMs())
  }

  /** A peer's Ping is its heartbeat: sent on a fixed interval, so its rhythm is regular. The interval that spans our own stall is not its rhythm. */
  function onPing(state: MembershipState, peer: string, now: number) {
    observePause(state, now)
    const detector = state.detectors.get(peer)
    if (detector && state.guard.isSuppressed(now)) detector.skipInterval(now)
    else detector?.heartbeat(now)
  }

  function onGossip(state: MembershipState, peer: string, payload: unknown, now: number) {
    observePause(state, now)
    const parsed = parseGossip(payload)
    if (!parsed.ok) {
      deps.log.warn({ peer, why: parsed.error }, 'mesh gossip refused')
      return
    }
    const tunnel = deps.links.get(peer)
    const message = parsed.value
    if (message.type === 'digest') {
      tunnel?.sendControl(FrameType.Gossip, state.view.deltaFor(message))
      return
    }
    for (const changed of state.view.merge(message.states)) refreshView(state, changed, now)
    if (message.want.length > 0) tunnel?.sendControl(FrameType.Gossip, state.view.answer(message.want))
  }

  function judge(state: MembershipState, now: number) {
    for (const [peer, detector] of state.detectors) {
      const suspect = isSuspect(detector, state.guard, now)
      if (suspect !== state.suspects.has(peer)) {
        if (suspect) state.suspects.add(peer)
        else state.suspects.delete(peer)
        deps.log.info({ peer, phi: detector.phi(now) }, suspect ? 'mesh peer suspect' : 'mesh peer heard again')
        deps.suspicionChanged(peer, suspect)
      }
      refreshView(state, peer, now)
    }
  }

  function refreshView(state: MembershipState, peer: string, now: number) {
    const detector = state.detectors.get(peer)
    const phi = detector ? Math.min(detector.phi(now), 1e6) : 0
    const endpoint = state.view.get(peer)?.endpoint ?? deps.peers.get(peer)?.endpoint
    // a peer that dialed us is listed once gossip or the registry has told us where it listens
    if (endpoint === undefined) return
    deps.peers.set(peer, { runtime: peer, endpoint, phi, suspect: state.suspects.has(peer), connected: deps.links.has(peer) })
  }

  self = kernel.spawn(MEMBERSHIP_PATH, def)
  return { ref: self, accept: (tunnel) => links.accept(tunnel) }
}
