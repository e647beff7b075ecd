// State: the one tunnel this node keeps to one peer runtime, the dial in flight, and the dial backoff.
// Messages: Dial (reconcile found the peer unlinked), Dialed (the dial's outcome), Accepted (the peer dialed
// us), Closed (a tunnel ended). Policy: permanent with backoff; a failed dial is not a crash but backs off
// the same way (500 ms doubling to 30 s, jittered), and a link that stays up 30 s resets it.
// Two nodes that dial each other at once end up with two tunnels; both keep the one dialed by the smaller
// runtime id (protocols/mesh/link-choice.ts), so they agree without a word.
import type { Tunnel, TunnelEnd } from '../../infra/mesh/tunnel.js'
import { cappedBackoffDelayMs } from '../../protocols/backoff.js'
import { isPreferredLink } from '../../protocols/mesh/link-choice.js'
import { type ActorDef, type Kernel, pipeTo, type Settled, type TypedRef, tell } from '../kernel/index.js'

export type PeerMsg =
  | { type: 'Dial'; endpoint: string }
  | { type: 'Dialed'; outcome: Settled<Tunnel> }
  | { type: 'Accepted'; tunnel: Tunnel }
  | { type: 'Closed'; tunnel: Tunnel; end: TunnelEnd }

export interface PeerDeps {
  self: string
  dial(endpoint: string, peer: string): Promise<Tunnel>
  /** the live tunnels by peer, read beside the actors (sessions forward through them) */
  links: Map<string, Tunnel>
  linkUp(peer: string): void
  linkDown(peer: string, end: TunnelEnd): void
  now(): number
  random(): number
  log: { info(o: object, m: string): void; debug(o: object, m: string): void }
}

interface PeerState {
  tunnel: Tunnel | undefined
  dialing: boolean
  failures: number
  nextDialAtMs: number
  upSinceMs: number
}

const DIAL_BACKOFF = { minMs: 500, maxMs: 30_000, jitter: 0.5 }
const STABLE_MS = 30_000

export const peerPath = (runtime: string) => `mesh/peer/${runtime}`

export function peerRef(kernel: Kernel, peer: string, deps: PeerDeps): TypedRef<PeerMsg> {
  const def: ActorDef<PeerState, PeerMsg> = {
    kind: 'mesh-peer',
    supervisor: 'node',
    policy: { mode: 'permanent', backoff: { minMs: 1_000, maxMs: 30_000, jitter: 0.2 } },
    init: () => ({ tunnel: undefined, dialing: false, failures: 0, nextDialAtMs: 0, upSinceMs: 0 }),
    handle: (state, msg, ctx) => {
      switch (msg.type) {
        case 'Dial': {
          if (state.tunnel || state.dialing || deps.now() < state.nextDialAtMs) return state
          state.dialing = true
          pipeTo(ctx.self, deps.dial(msg.endpoint, peer), (o): PeerMsg => ({ type: 'Dialed', outcome: o }), { everyMs: 100, forMs: 10_000 })
          return state
        }
        case 'Dialed': {
          state.dialing = false
          if (msg.outcome.ok) return adopt(state, msg.outcome.value, ctx.self)
          state.failures++
          state.nextDialAtMs = deps.now() + cappedBackoffDelayMs(DIAL_BACKOFF, state.failures - 1, deps.random())
          deps.log.debug({ peer, err: msg.outcome.error, attempt: state.failures }, 'mesh dial failed')
          return state
        }
        case 'Accepted':
          return adopt(state, msg.tunnel, ctx.self)
        case 'Closed': {
          if (state.tunnel !== msg.tunnel) return state
          if (deps.now() - state.upSinceMs >= STABLE_MS) state.failures = 0
          state.tunnel = undefined
          deps.links.delete(peer)
          deps.linkDown(peer, msg.end)
          return state
        }
      }
    },
    afterStop: (state) => {
      state.tunnel?.goodbye('ended')
      deps.links.delete(peer)
    },
  }

  function adopt(state: PeerState, tunnel: Tunnel, self: TypedRef<PeerMsg>): PeerState {
    const current = state.tunnel
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
    state.upSinceMs = deps.now()
    deps.links.set(peer, tunnel)
    void tunnel.closed.then((end) => tell(self, { type: 'Closed', tunnel, end }))
    deps.linkUp(peer)
    deps.log.info({ peer, dialer: tunnel.dialer === deps.self ? 'us' : 'them' }, 'mesh link up')
    return state
  }

  return kernel.getOrSpawn(peerPath(peer), def)
}
