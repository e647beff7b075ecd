import type { WebSocket } from 'ws'
import { Fifo } from '../fifo.js'
import type { TrafficMeter } from './traffic-meter.js'

/**
 * One connection's outbound lane (architecture §6.6). Producers (its own actor, the community's fan-out) push ready
 * frames; at most one flush is pending at a time (the "one pending wake"). The bound counts bytes queued here
 * plus bytes `ws` has not yet written to the kernel. A reader that STAYS over it (for the grace period) is a
 * slow consumer and is closed with a reason — a subscriber is never silently skipped. One big REQ page may
 * take a healthy reader over the bound for a moment; only HARD_FACTOR times the bound closes at once, and a
 * page that a reader within its bound asked for counts towards that only past another HARD_FACTOR (pushPage).
 *
 * The backlog of a reader that doesn't keep up stays HERE, not in `ws`: frames go to the socket only while it
 * takes them (no `drain` awaited), so closing a slow consumer frees its backlog at once and its close frame
 * waits behind at most one write batch plus the kernel's buffer. Handed to `ws`, the same bytes could only be
 * freed by destroying the socket, and the close frame would sit behind all of them (a paused reader's backlog
 * would stay in `ws`, and in RSS, for the 30 s of ws's close timeout).
 */
export interface OutboundQueue {
  /** false when the connection is closed or was just closed as a slow consumer */
  push(frame: string): boolean
  /** frames that must not wait behind bulk data (NOTICE, CLOSED, OK): sent before any queued bulk frame */
  pushControl(frame: string): boolean
  /**
   * A REQ's page, queued whole. When the reader is within its bound as the page begins, up to HARD_FACTOR ×
   * the bound of the page's bytes do not count towards the hard bound until they are written (a page can be
   * bigger than the hard bound, and a reader that reads takes it at once); the grace period applies as to any
   * bytes. A reader over its bound gets no such allowance, so at most one page is exempt at a time and a
   * connection never holds more than twice the hard bound.
   */
  pushPage(frames: readonly string[]): boolean
  readonly pendingBytes: number
  readonly closed: boolean
  /** send what is queued (a NOTICE/OK explaining why), then close the socket */
  closeAfterFlush(code: number, reason: string): void
}

/** What the queue did to a slow consumer, for the caller to count and log. */
export interface SlowConsumerClose {
  code: number
  reason: string
  /** queued here plus buffered in ws when it was closed */
  pendingBytes: number
}

export interface OutboundQueueOptions {
  maxPendingBytes: number
  graceMs: number
  /** told once, after the queue has started closing the socket as a slow consumer */
  onSlowConsumer: (close: SlowConsumerClose) => void
  /** counts what is handed to the socket (the console's hot connections) */
  meter?: Pick<TrafficMeter, 'bytesOut'>
}

/** Memory bound per connection: beyond this multiple of maxPendingBytes no grace is given. */
const HARD_FACTOR = 4

/** NIP-01 says nothing; RFC 6455 §7.4.1: 1008 is "policy violation", the generic refusal. */
export const SLOW_CONSUMER_CODE = 1008
export const SLOW_CONSUMER_REASON = 'error: slow consumer, outbound queue over its bound'

/**
 * How long a slow consumer's close frame may wait for the peer to read up to it before the socket is
 * destroyed. A paused peer never reads it, and ws's own close timeout (30 s) would keep the socket, its
 * kernel buffer and its slot that long; the README promises the close within slowConsumerGraceMs + 1 s.
 */
export const SLOW_CLOSE_LINGER_MS = 500

/**
 * How long any other close we start (a ban, an archived community) waits for the peer's close frame: a
 * client that reads answers in milliseconds; one that doesn't must not hold the socket for ws's 30 s.
 */
const CLOSE_LINGER_MS = 5_000

/**
 * Bytes handed to ws per corked write: one writev each (per-frame writes take a large share of the main
 * thread under REQ load). Above the socket's 16 KiB highWaterMark, so a batch the kernel can't take whole
 * always ends in a `drain`.
 */
const WRITE_BATCH_BYTES = 64 * 1024

type Socket = { cork(): void; uncork(): void; readonly writableNeedDrain: boolean; on(event: 'drain', fn: () => void): void }

export function createOutboundQueue(ws: WebSocket, opts: OutboundQueueOptions): OutboundQueue {
  const control = new Fifo<string>()
  const bulk = new Fifo<string>()
  let queuedBytes = 0
  // bytes ever queued / ever handed to ws: an exempt page is the stretch up to exemptEnd
  let queuedTotal = 0
  let writtenTotal = 0
  let exemptEnd = 0
  let exemptBytes = 0
  let wakePending = false
  let closed = false
  let graceTimer: ReturnType<typeof setTimeout> | undefined
  // ws's socket (set before ws hands the connection over); absent only for a socket-less test double
  const socket = (ws as unknown as { _socket?: Socket })._socket

  const pending = () => queuedBytes + ws.bufferedAmount
  const drop = () => {
    control.clear()
    bulk.clear()
    queuedBytes = 0
  }
  const stop = () => {
    closed = true
    drop()
    if (graceTimer) clearTimeout(graceTimer)
    graceTimer = undefined
  }
  const closeSlow = () => {
    const pendingBytes = pending()
    stop()
    if (ws.readyState === ws.OPEN) ws.close(SLOW_CONSUMER_CODE, SLOW_CONSUMER_REASON)
    // a reader that catches up within the linger completes the handshake and sees 1008; a paused one can't
    const linger = setTimeout(() => ws.terminate(), SLOW_CLOSE_LINGER_MS)
    linger.unref?.()
    ws.once('close', () => clearTimeout(linger))
    opts.onSlowConsumer({ code: SLOW_CONSUMER_CODE, reason: SLOW_CONSUMER_REASON, pendingBytes })
  }
  /** what is left unwritten of the exempt page */
  const exempt = () => Math.max(0, Math.min(exemptBytes, exemptEnd - writtenTotal))
  const checkBound = (): boolean => {
    const p = pending()
    if (p - exempt() > opts.maxPendingBytes * HARD_FACTOR) {
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
  const take = () => control.shift() ?? bulk.shift()
  /** hands queued frames to ws, control first, while the socket takes them (all of them when `force`) */
  const write = (force: boolean) => {
    while (queuedBytes > 0 && (force || !socket?.writableNeedDrain)) {
      socket?.cork()
      for (let batch = 0; batch < WRITE_BATCH_BYTES; ) {
        const f = take()
        if (f === undefined) break
        queuedBytes -= f.length
        writtenTotal += f.length
        batch += f.length
        opts.meter?.bytesOut(f.length)
        ws.send(f)
      }
      socket?.uncork()
    }
    // back within the bound: a later excursion gets its own grace period
    if (graceTimer !== undefined && pending() <= opts.maxPendingBytes) {
      clearTimeout(graceTimer)
      graceTimer = undefined
    }
  }
  const flush = () => {
    wakePending = false
    if (closed || ws.readyState !== ws.OPEN) return drop()
    write(false)
  }
  const wake = () => {
    if (wakePending) return
    wakePending = true
    setImmediate(flush)
  }
  // the rest of a backlog goes out once the socket has passed the last batch to the kernel
  socket?.on('drain', () => {
    if (queuedBytes > 0) wake()
  })
  const enqueue = (l: Fifo<string>, frame: string): boolean => {
    if (closed || ws.readyState !== ws.OPEN) return false
    add(l, frame)
    return admitted()
  }
  const add = (l: Fifo<string>, frame: string) => {
    l.push(frame)
    // string length is a lower bound of UTF-8 bytes; close enough for a bound measured in MiB
    queuedBytes += frame.length
    queuedTotal += frame.length
  }
  const admitted = (): boolean => {
    if (!checkBound()) return false
    // while the socket owes a drain, that drain wakes the flush
    if (!socket?.writableNeedDrain) wake()
    return true
  }

  return {
    closeAfterFlush(code, reason) {
      if (closed) return
      // the answers that explain the close (a ban's NOTICE, OKs) go out; live events no longer matter to a
      // client being closed, and its backlog is freed now rather than handed to ws
      const explaining: string[] = []
      for (let f = control.shift(); f !== undefined; f = control.shift()) explaining.push(f)
      bulk.clear()
      queuedBytes = 0
      for (const f of explaining) {
        control.push(f)
        queuedBytes += f.length
      }
      if (ws.readyState === ws.OPEN) write(true)
      stop()
      if (ws.readyState !== ws.OPEN) return
      ws.close(code, reason)
      // a peer that doesn't read never completes the handshake: don't let it hold the socket for ws's 30 s
      const linger = setTimeout(() => ws.terminate(), CLOSE_LINGER_MS)
      linger.unref?.()
      ws.once('close', () => clearTimeout(linger))
    },
    push: (frame) => enqueue(bulk, frame),
    pushPage(frames) {
      if (closed || ws.readyState !== ws.OPEN) return false
      const within = pending() <= opts.maxPendingBytes
      const start = queuedTotal
      for (const f of frames) add(bulk, f)
      if (within) {
        exemptBytes = Math.min(queuedTotal - start, opts.maxPendingBytes * HARD_FACTOR)
        exemptEnd = queuedTotal
      }
      return admitted()
    },
    pushControl: (frame) => enqueue(control, frame),
    get pendingBytes() {
      return pending()
    },
    get closed() {
      return closed || ws.readyState !== ws.OPEN
    },
  }
}
