// State: the one tunnel this node keeps to one peer runtime, and the dial in flight.
// Messages: Dialed (the outcome of the dial its init started), Accepted (the peer dialed us), Closed (a tunnel ended).
// Policy: permanent and never giving up (peerLinkPolicy): a failed dial or a closed tunnel is a crash, so
// supervision redials with jittered backoff through the next init; the membership actor stops it when the peer leaves.
// Two nodes that dial each other at once end up with two tunnels; both keep the one dialed by the smaller
// runtime id (protocols/mesh/link-choice.ts), so they agree without a word.
import { type Tunnel, type TunnelEnd, TunnelError } from '../../infra/mesh/tunnel.js'
import { isPreferredLink } from '../../protocols/mesh/link-choice.js'
import { type ActorDef, pipeTo, type Settled, type SupervisionPolicy, type TypedRef, tell } from '../kernel/index.js'

export type PeerMsg =
  | { type: 'Dialed'; attempt: object; outcome: Settled<Tunnel> }
  | { type: 'Accepted'; tunnel: Tunnel }
  | { type: 'Closed'; tunnel: Tunnel; end: TunnelEnd }

export interface PeerDeps {
  self: string
  /** where the peer listens, as the registry or gossip last said; undefined while neither has */
  endpointOf(peer: string): string | undefined
  dial(endpoint: string, peer: string): Promise<Tunnel>
  /** the live tunnels by peer, read beside the actors (sessions forward through them) */
  links: Map<string, Tunnel>
  linkUp(peer: string): void
  linkDown(peer: string, end: TunnelEnd): void
  log: { info(o: object, m: string): void; debug(o: object, m: string): void }
}

interface PeerState {
  tunnel: Tunnel | undefined
  /** the dial in flight; a failure of any other (from before a restart) is no crash */
  dialing: object | undefined
}

export const peerLinkPolicy = {
  mode: 'permanent',
  // the next dial waits 500 ms doubling to 30 s, lengthened by up to half at random, so that the nodes that
  // lost one peer at once do not redial it in step
  backoff: { minMs: 500, maxMs: 30_000, jitter: 0.5 },
  // a link that stayed up this long starts the backoff again at its first step
  resetAfterMs: 30_000,
  // never gives up: redialing is how a link comes back, and membership stops the actor once the peer leaves
  maxRestarts: Number.MAX_SAFE_INTEGER,
  windowMs: 60_000,
} satisfies Partial<SupervisionPolicy>

/** A dial's tunnel the actor cannot take (stopped meanwhile) is offered for this long, then closed. */
const PIPE = { everyMs: 100, forMs: 10_000 } as const

export const peerPath = (runtime: string) => `mesh/peer/${runtime}`

/** The link actor for `peer`; `opening` is the tunnel the peer dialed, when that is what spawns it (no dial then). */
export function peerLinkDef(peer: string, deps: PeerDeps, opening?: Tunnel): ActorDef<PeerState, PeerMsg> {
  let offered = opening
  return {
    kind: 'mesh-peer',
    supervisor: 'node',
    policy: peerLinkPolicy,
    // the peer dialed us: adopt it now rather than after our own backoff
    endsBackoff: (msg) => msg.type === 'Accepted',
    init: (ctx) => {
      dropLeftover()
      const state: PeerState = { tunnel: undefined, dialing: undefined }
      const tunnel = offered
      offered = undefined
      return tunnel ? adopt(state, tunnel, ctx.self) : dial(state, ctx.self)
    },
    handle: (state, msg, ctx) => {
      switch (msg.type) {
        case 'Dialed':
          return onDialed(state, msg, ctx.self)
        case 'Accepted':
          return adopt(state, msg.tunnel, ctx.self)
        case 'Closed':
          return onClosed(state, msg)
      }
    },
    afterStop: (state) => {
      if (!state.tunnel) return
      state.tunnel.goodbye('ended')
      if (deps.links.get(peer) !== state.tunnel) return
      deps.links.delete(peer)
      deps.linkDown(peer, { reason: 'ended', byPeer: false })
    },
  }

  /** A crash with a link up would leave its tunnel open and listed: the fresh incarnation closes it. */
  function dropLeftover(): void {
    const leftover = deps.links.get(peer)
    if (!leftover) return
    deps.links.delete(peer)
    leftover.goodbye('ended')
    deps.linkDown(peer, { reason: 'ended', byPeer: false })
  }

  function dial(state: PeerState, self: TypedRef<PeerMsg>): PeerState {
    const endpoint = deps.endpointOf(peer)
    const attempt = {}
    const dialing =
      endpoint === undefined
        ? Promise.reject(new TunnelError('HANDSHAKE', `no endpoint known for mesh peer ${peer.slice(0, 12)}`))
        : deps.dial(endpoint, peer)
    pipeTo(self, dialing, (outcome): PeerMsg => ({ type: 'Dialed', attempt, outcome }), {
      ...PIPE,
      onGiveUp: (msg) => {
        if (msg.type === 'Dialed' && msg.outcome.ok) msg.outcome.value.goodbye('ended')
      },
    })
    state.dialing = attempt
    return state
  }

  function onDialed(state: PeerState, msg: Extract<PeerMsg, { type: 'Dialed' }>, self: TypedRef<PeerMsg>): PeerState {
    const current = msg.attempt === state.dialing
    if (current) state.dialing = undefined
    if (msg.outcome.ok) return adopt(state, msg.outcome.value, self)
    if (!current || state.tunnel) {
      deps.log.debug({ peer, err: msg.outcome.error }, 'mesh dial failed; linked meanwhile')
      return state
    }
    // no link and no dial: supervision redials after its backoff
    throw msg.outcome.error
  }

  function onClosed(state: PeerState, msg: Extract<PeerMsg, { type: 'Closed' }>): PeerState {
    if (state.tunnel !== msg.tunnel) return state
    state.tunnel = undefined
    if (deps.links.get(peer) === msg.tunnel) deps.links.delete(peer)
    deps.linkDown(peer, msg.end)
    // the peer is leaving (or this node is): nothing to redial, and membership stops this actor
    if (msg.end.reason === 'draining') return state
    // a dial in flight brings the next link, or crashes if it fails
    if (state.dialing) return state
    throw new TunnelError('CLOSED', `mesh link to ${peer.slice(0, 12)} closed (${msg.end.reason}${msg.end.byPeer ? ', by the peer' : ''})`)
  }

  function adopt(state: PeerState, tunnel: Tunnel, self: TypedRef<PeerMsg>): PeerState {
    const current = state.tunnel
    if (current === tunnel) return state
    if (current) {
      // the same dialer again means the old tunnel is dead and not yet noticed: the new one wins
      const keepNew = current.dialer === tunnel.dialer || isPreferredLink(tunnel.dialer, tunnel.dialer === deps.self ? peer : deps.self)
      if (!keepNew) {
        tunnel.goodbye('ended')
        return state
      }
      current.goodbye('ended')
    }
    state.tunnel = tunnel
    deps.links.set(peer, tunnel)
    void tunnel.closed.then((end) => tell(self, { type: 'Closed', tunnel, end }))
    deps.linkUp(peer)
    deps.log.info({ peer, dialer: tunnel.dialer === deps.self ? 'us' : 'them' }, 'mesh link up')
    return state
  }
}
