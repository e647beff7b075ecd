import type { WebSocket } from 'ws'

export interface Watched {
  ws: WebSocket
  alive: boolean
  lastFrameAtMs: number
  /** true while the connection holds something that justifies silence (auth, subscriptions) */
  isBusy(): boolean
}

/**
 * One timer for all connections (not one per socket): every interval each socket must have answered the
 * previous ping, or it is terminated; a silent, unauthenticated socket with nothing open is closed as idle.
 */
export function startHeartbeat(opts: {
  intervalMs: number
  idleMs: number
  nowMs: () => number
  sockets: () => Iterable<Watched>
}): () => void {
  const timer = setInterval(() => {
    const now = opts.nowMs()
    for (const w of opts.sockets()) {
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
  }, opts.intervalMs)
  timer.unref()
  return () => clearInterval(timer)
}

export function watch(ws: WebSocket, nowMs: () => number, isBusy: () => boolean): Watched {
  const w: Watched = { ws, alive: true, lastFrameAtMs: nowMs(), isBusy }
  ws.on('pong', () => {
    w.alive = true
  })
  return w
}
