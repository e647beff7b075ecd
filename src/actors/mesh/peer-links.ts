// Which peers have a link actor (peer-actor.ts), for the membership actor: one is spawned for each peer that
// should be linked and stopped when the peer leaves; a tunnel a peer dials to us goes to that peer's actor,
// or spawns one that adopts it. Lives outside membership's state, so a membership restart forgets no link.
import type { Tunnel } from '../../infra/mesh/tunnel.js'
import { type Kernel, tell } from '../kernel/index.js'
import { type PeerDeps, type PeerMsg, peerLinkDef, peerPath } from './peer-actor.js'

export interface PeerLinks {
  /** a link actor for `peer` unless one is live (its init dials) */
  ensure(peer: string): void
  /** the peer left: its actor stops (its afterStop closes the tunnel) and dials no more */
  stop(peer: string): void
  /** a tunnel the peer dialed: never throws (the tunnel server calls it) */
  accept(tunnel: Tunnel): void
  /** the peers with a live link actor */
  peers(): string[]
}

export function createPeerLinks(kernel: Kernel, deps: PeerDeps): PeerLinks {
  const spawned = new Set<string>()
  return {
    ensure(peer) {
      spawned.add(peer)
      if (!kernel.exists(peerPath(peer))) kernel.spawn(peerPath(peer), peerLinkDef(peer, deps))
    },
    stop(peer) {
      spawned.delete(peer)
      void kernel.stop(peerPath(peer))
    },
    accept(tunnel) {
      const live = kernel.lookup<PeerMsg>(peerPath(tunnel.peer))
      try {
        if (live) {
          if (!tell(live, { type: 'Accepted', tunnel })) tunnel.goodbye('ended')
          return
        }
        kernel.spawn(peerPath(tunnel.peer), peerLinkDef(tunnel.peer, deps, tunnel))
        spawned.add(tunnel.peer)
      } catch {
        // the kernel is shutting down
        tunnel.goodbye('ended')
      }
    },
    peers() {
      for (const peer of spawned) if (!kernel.exists(peerPath(peer))) spawned.delete(peer)
      return [...spawned]
    },
  }
}
