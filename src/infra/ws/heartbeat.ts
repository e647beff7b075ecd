import type { WebSocket } from 'ws'

export interface Watched {
  ws: WebSocket
  alive: boolean
  lastFrameAtMs: number
  /** true while the connection holds something that justifies silence (auth, subscriptions) */
  isBusy(): boolean
  /** which of the SLICES ticks of an interval visits this socket */
  slot: number
}

/**
 * Each interval is cut into this many ticks, and each socket is visited on one of them (round robin), so a
 * node with 3,000 connections pings 30 per tick instead of 3,000 in one turn of the event loop: every ping
 * is a socket write (a syscall, and on loopback the peer's TCP work too), and hundreds of pings in one turn
 * hold the loop long enough to show in the handshakes' latency tail (a CPU profile under the agents benchmark
 * shows such a tick as one long task). A tick walks every socket to find its slot, far cheaper than the pings.
 */
export const SLICES = 100
let nextSlot = 0

/**
 * One timer for all connections (not one per socket): every interval each socket must have answered the
 * previous ping, or it is terminated; a silent, unauthenticated socket with nothing open is closed as idle.
 * The visits are spread over the interval (SLICES); each socket is still visited once per interval.
 */
export function startHeartbeat(opts: {
  intervalMs: number
  idleMs: number
  nowMs: () => number
  sockets: () => Iterable<Watched>
}): () => void {
  // an interval under SLICES ms is cut into fewer slices: a tick under 1 ms would run every 1 ms (Node's
  // floor) and stretch the interval
  const slices = Math.max(1, Math.min(SLICES, Math.floor(opts.intervalMs)))
  let tick = 0
  const timer = setInterval(() => {
    const slice = tick++ % slices
    const now = opts.nowMs()
    for (const w of opts.sockets()) {
      if (w.slot % slices !== slice) continue
      if (!w.alive) {
        w.ws.terminate()
        continue
      }
      if (!w.isBusy() && now - w.lastFrameAtMs >= opts.idleMs) {
        w.ws.close(1000, 'idle timeout')
        continue
      }
      w.alive = false
      w.ws.ping()
    }
  }, opts.intervalMs / slices)
  timer.unref()
  return () => clearInterval(timer)
}

export function watch(ws: WebSocket, nowMs: () => number, isBusy: () => boolean): Watched {
  const w: Watched = { ws, alive: true, lastFrameAtMs: nowMs(), isBusy, slot: nextSlot++ % SLICES }
  ws.on('pong', () => {
    w.alive = true
  })
  return w
}
