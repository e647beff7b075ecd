import type { WebSocket } from 'ws'

/**
 * One connection's outbound lane (DESIGN §5). Producers (its own actor, the community's fan-out) push ready
 * frames; at most one flush is pending at a time (the "one pending wake"). The bound counts bytes queued here
 * plus bytes `ws` has not yet written to the kernel. A reader that STAYS over it (for the grace period) is a
 * slow consumer and is closed with a reason — a subscriber is never silently skipped. One big REQ page may
 * take a healthy reader over the bound for a moment; only HARD_FACTOR times the bound closes at once.
 */
export interface OutboundQueue {
  /** false when the connection is closed or was just closed as a slow consumer */
  push(frame: string): boolean
  /** frames that must not wait behind bulk data (NOTICE, CLOSED, OK): sent first at the next flush */
  pushControl(frame: string): boolean
  readonly pendingBytes: number
  readonly closed: boolean
  /** send what is queued (a NOTICE/OK explaining why), then close the socket */
  closeAfterFlush(code: number, reason: string): void
}

export interface OutboundQueueOptions {
  maxPendingBytes: number
  graceMs: number
  onSlowConsumer: () => void
}

/** Memory bound per connection: beyond this multiple of maxPendingBytes no grace is given. */
const HARD_FACTOR = 4

export function createOutboundQueue(ws: WebSocket, opts: OutboundQueueOptions): OutboundQueue {
  let control: string[] = []
  let bulk: string[] = []
  let queuedBytes = 0
  let wakePending = false
  let closed = false
  let graceTimer: ReturnType<typeof setTimeout> | undefined

  const pending = () => queuedBytes + ws.bufferedAmount
  const closeSlow = () => {
    closed = true
    control = []
    bulk = []
    queuedBytes = 0
    if (graceTimer) clearTimeout(graceTimer)
    opts.onSlowConsumer()
  }
  const checkBound = (): boolean => {
    const p = pending()
    if (p > opts.maxPendingBytes * HARD_FACTOR) {
      closeSlow()
      return false
    }
    if (p > opts.maxPendingBytes && graceTimer === undefined) {
      graceTimer = setTimeout(() => {
        graceTimer = undefined
        if (!closed && ws.readyState === ws.OPEN && pending() > opts.maxPendingBytes) closeSlow()
      }, opts.graceMs)
      graceTimer.unref?.()
    }
    return true
  }
  const flush = () => {
    wakePending = false
    if (closed || ws.readyState !== ws.OPEN) {
      control = []
      bulk = []
      queuedBytes = 0
      return
    }
    const frames = control.length ? control.concat(bulk) : bulk
    control = []
    bulk = []
    queuedBytes = 0
    // ws writes each frame with its own syscall; corking the TCP socket for the batch turns a REQ page of
    // 40 frames into one writev (measured: writev was a third of the main thread under REQ load).
    const socket = (ws as unknown as { _socket?: { cork(): void; uncork(): void } })._socket
    socket?.cork()
    for (const f of frames) ws.send(f)
    socket?.uncork()
  }
  const enqueue = (lane: string[], frame: string): boolean => {
    if (closed || ws.readyState !== ws.OPEN) return false
    lane.push(frame)
    // string length is a lower bound of UTF-8 bytes; close enough for a bound measured in MiB
    queuedBytes += frame.length
    if (!checkBound()) return false
    if (!wakePending) {
      wakePending = true
      setImmediate(flush)
    }
    return true
  }

  return {
    closeAfterFlush(code, reason) {
      if (closed) return
      flush()
      closed = true
      if (graceTimer) clearTimeout(graceTimer)
      if (ws.readyState === ws.OPEN) ws.close(code, reason)
    },
    push: (frame) => enqueue(bulk, frame),
    pushControl: (frame) => enqueue(control, frame),
    get pendingBytes() {
      return queuedBytes + ws.bufferedAmount
    },
    get closed() {
      return closed || ws.readyState !== ws.OPEN
    },
  }
}
