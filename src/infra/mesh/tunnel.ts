// An established tunnel between two mesh nodes: requests and responses over one WebSocket, after
// the handshake (tunnel-handshake.ts) proved who the peer is.
//
// Streams: each request opens a stream of its own — odd ids for the side that dialed, even for the side that
// accepted, so the two never pick the same one — and its response comes back on it. Stream 0 carries the
// control frames (Gossip, Ping, Pong, Goodbye, a tunnel-wide Error).
// Flow control: every stream has a window of credit in each direction (protocols/mesh/credit.ts), and the
// tunnel has one more over all streams (CONNECTION_WINDOW_BYTES, granted on stream 0). A body's chunks leave
// only while both windows allow; the receiver grants credit back as it reads them off the socket. A peer that stops reading (SIGSTOP, a stuck loop) stops granting, so what we hold for it is
// bounded: at most a window per stream on the wire, bodies of requests still within their deadline here, and
// new requests past maxOutboundRequests or maxQueuedBytes are refused at once (TunnelError BUSY), visibly.
// Control frames take no credit (a full window must never hold back the frame that reopens it); they are
// dropped, and the drop reported to the caller, once the socket's own send buffer is backed up.
// A peer that breaks the framing (a bad frame, more than its credit, a body past the limits) gets an Error
// frame and the tunnel closes: the framing cannot be resynchronised.
import type { WebSocket } from 'ws'
import { createReassembler, toChunks } from '../../protocols/mesh/chunking.js'
import {
  createReceiveWindow,
  createSendWindow,
  encodeCredit,
  parseCredit,
  type ReceiveWindow,
  type SendWindow,
} from '../../protocols/mesh/credit.js'
import {
  CONTROL_STREAM_ID,
  encodeFrame,
  encodeJsonPayload,
  FrameType,
  type MeshFrame,
  NO_REQUEST_ID,
  parseFrame,
  parseJsonPayload,
} from '../../protocols/mesh/frames.js'
import type { HelloRole } from '../../protocols/mesh/hello.js'
import type { SealBreak, TunnelSeal } from './tunnel-seal.js'

export type GoodbyeReason = 'ended' | 'draining' | 'stale'
export type ControlType = typeof FrameType.Gossip | typeof FrameType.Ping | typeof FrameType.Pong
export type TunnelErrorCode = 'CLOSED' | 'TIMEOUT' | 'BUSY' | 'PEER_ERROR' | 'HANDSHAKE'

export class TunnelError extends Error {
  constructor(
    readonly code: TunnelErrorCode,
    message: string,
  ) {
    super(message)
  }
}

export interface TunnelEnd {
  /**
   * a Goodbye's reason, or `lost` (socket closed without one), or `protocol` (a framing violation), or a sealed
   * frame that did not open: `forged` (altered, injected), `replayed`, `reordered` (tunnel-seal.ts)
   */
  reason: GoodbyeReason | 'lost' | 'protocol' | SealBreak
  /** the peer said it (its Goodbye or Error), rather than this side */
  byPeer: boolean
}

export interface TunnelHandlers {
  /** answers one request of the peer; a rejection is sent back as an Error on that stream */
  onRequest(body: Uint8Array, signal: AbortSignal): Promise<Uint8Array>
  onControl(type: ControlType, payload: unknown): void
}

export interface TunnelLimits {
  maxOutboundRequests: number
  maxInboundRequests: number
  /** request and response bytes waiting for credit, all streams together */
  maxQueuedBytes: number
  /** the socket's send buffer past which control frames are dropped */
  controlBacklogBytes: number
}

/**
 * Payload bytes in flight on one tunnel, all streams together (HTTP/2's connection window). Per-stream credit
 * alone bounds nothing when every request is a stream of its own: 256 single-frame 1 MiB requests to a stopped
 * peer could put 256 MiB into the socket's send buffer. With it: at most 16 MiB on the wire,
 * the rest queued (maxQueuedBytes), then BUSY.
 */
export const CONNECTION_WINDOW_BYTES = 16 * 1024 * 1024

export const DEFAULT_TUNNEL_LIMITS: TunnelLimits = {
  maxOutboundRequests: 256,
  maxInboundRequests: 256,
  maxQueuedBytes: 64 * 1024 * 1024,
  controlBacklogBytes: 8 * 1024 * 1024,
}

export interface Tunnel {
  readonly peer: string
  readonly role: HelloRole
  /** the runtime that dialed: with `peer`, what decides which of two links between a pair survives */
  readonly dialer: string
  request(body: Uint8Array, timeoutMs: number): Promise<Uint8Array>
  /** false: dropped, the peer is not reading */
  sendControl(type: ControlType, json: unknown): boolean
  goodbye(reason: GoodbyeReason): void
  readonly closed: Promise<TunnelEnd>
  stats(): { queuedBytes: number; outbound: number; inbound: number; bufferedAmount: number }
}

interface Outbound {
  window: SendWindow
  queue: MeshFrame[]
  /** response credit we owe the peer as we read its chunks */
  receive: ReceiveWindow
  resolve(body: Uint8Array): void
  reject(error: TunnelError): void
  timer: NodeJS.Timeout
}

interface Inbound {
  receive: ReceiveWindow
  window: SendWindow
  queue: MeshFrame[]
  abort: AbortController
  /** the response's last frame left: the stream is done */
  onSent?: () => void
}

/** `sealing` seals every frame this side sends and opens every frame the peer sends (tunnel-seal.ts). */
export function openTunnel(
  socket: WebSocket,
  who: { self: string; peer: string; role: HelloRole },
  handlers: TunnelHandlers,
  sealing: TunnelSeal,
  limits = DEFAULT_TUNNEL_LIMITS,
): Tunnel {
  const { peer, role } = who
  const outbound = new Map<number, Outbound>()
  const inbound = new Map<number, Inbound>()
  const reassembler = createReassembler()
  let nextStream = role === 'dialer' ? 1 : 2
  let queuedBytes = 0
  let ended: TunnelEnd | undefined
  let resolveClosed!: (end: TunnelEnd) => void
  const closed = new Promise<TunnelEnd>((r) => {
    resolveClosed = r
  })

  const send = (frame: MeshFrame) => socket.send(sealing.seal(encodeFrame(frame)))
  const isPeerStream = (stream: number) => stream !== CONTROL_STREAM_ID && (stream % 2 === 1) === (role === 'acceptor')

  // One body of several chunks leaves at a time (single-frame bodies pass beside it), so the peer holds at most
  // one unfinished body of ours: credit granted as chunks are read could otherwise let several large bodies
  // interleave past its reassembly bound (MAX_BUFFERED_BYTES), a violation by a sender that kept every window.
  let bodyInFlight: number | undefined
  const connectionSend = createSendWindow(CONNECTION_WINDOW_BYTES)
  const connectionReceive = createReceiveWindow(CONNECTION_WINDOW_BYTES)
  function pump() {
    for (const [id, stream] of sending) {
      while (stream.queue.length > 0) {
        const frame = stream.queue[0]!
        const bytes = frame.payload.byteLength
        if (bodyInFlight !== undefined && bodyInFlight !== id && frame.more) break
        if (!stream.window.canSend(bytes) || !connectionSend.canSend(bytes)) break
        stream.queue.shift()
        stream.window.consume(bytes)
        connectionSend.consume(bytes)
        queuedBytes -= frame.payload.byteLength
        bodyInFlight = frame.more ? id : bodyInFlight === id ? undefined : bodyInFlight
        send(frame)
      }
      if (stream.queue.length === 0) {
        sending.delete(id)
        stream.onSent?.()
      }
    }
  }
  /** streams with frames waiting, in the order they were queued */
  const sending = new Map<number, { window: SendWindow; queue: MeshFrame[]; onSent?: () => void }>()
  function enqueue(id: number, stream: { window: SendWindow; queue: MeshFrame[]; onSent?: () => void }, frames: MeshFrame[]) {
    for (const f of frames) queuedBytes += f.payload.byteLength
    stream.queue.push(...frames)
    sending.set(id, stream)
    pump()
  }

  /** a stream's unsent frames are given up (timeout, cancel, close); a body it had begun no longer blocks others */
  function drop(id: number, queue: MeshFrame[]) {
    for (const f of queue.splice(0)) queuedBytes -= f.payload.byteLength
    sending.delete(id)
    if (bodyInFlight === id) {
      bodyInFlight = undefined
      pump()
    }
  }

  function finish(end: TunnelEnd) {
    if (ended) return
    ended = end
    for (const [id, o] of outbound) {
      clearTimeout(o.timer)
      drop(id, o.queue)
      o.reject(new TunnelError('CLOSED', `mesh tunnel to ${peer.slice(0, 12)} closed (${end.reason}) before request ${id} was answered`))
    }
    outbound.clear()
    sending.clear()
    for (const i of inbound.values()) i.abort.abort()
    inbound.clear()
    socket.close()
    resolveClosed(end)
  }

  function violation(text: string) {
    if (ended) return
    send({
      type: FrameType.Error,
      more: false,
      streamId: CONTROL_STREAM_ID,
      requestId: NO_REQUEST_ID,
      payload: encodeJsonPayload({ reason: text }),
    })
    finish({ reason: 'protocol', byPeer: false })
  }

  function grant(stream: number, receive: ReceiveWindow, bytes: number) {
    const back = receive.consumed(bytes)
    if (back > 0) send({ type: FrameType.Credit, more: false, streamId: stream, requestId: stream, payload: encodeCredit(back) })
  }

  function onData(frame: MeshFrame) {
    const id = frame.streamId
    const bytes = frame.payload.byteLength
    // the connection's credit is for every data frame read, whatever becomes of it below
    const counted = connectionReceive.receive(bytes)
    if (!counted.ok) return violation(counted.error)
    grant(CONTROL_STREAM_ID, connectionReceive, bytes)
    if (frame.type === FrameType.Request) {
      if (!isPeerStream(id)) return violation(`request on stream ${id}, which is not the peer's to open`)
      let state = inbound.get(id)
      if (!state) {
        if (inbound.size >= limits.maxInboundRequests) {
          return sendStreamError(id, 'rate-limited: too many mesh requests in flight')
        }
        state = { receive: createReceiveWindow(), window: createSendWindow(), queue: [], abort: new AbortController() }
        inbound.set(id, state)
      }
      if (!accept(frame, state.receive)) return
      grant(id, state.receive, bytes)
      return
    }
    const o = outbound.get(id)
    if (!o) return // a response to a request we gave up on (timeout): its Cancel is on the way
    if (!accept(frame, o.receive)) return
    grant(id, o.receive, bytes)
  }

  /** window and reassembly; false when the frame broke either (the tunnel is closing) */
  function accept(frame: MeshFrame, receive: ReceiveWindow): boolean {
    const counted = receive.receive(frame.payload.byteLength)
    if (!counted.ok) {
      violation(counted.error)
      return false
    }
    const result = reassembler.accept(frame)
    if (!result.ok) {
      violation(result.error)
      return false
    }
    if (result.value.complete) deliver(frame.type, frame.streamId, result.value.body)
    return true
  }

  function deliver(type: FrameType, id: number, body: Uint8Array) {
    if (type === FrameType.Response) {
      const o = outbound.get(id)
      if (!o) return
      clearTimeout(o.timer)
      outbound.delete(id)
      o.resolve(body)
      return
    }
    const state = inbound.get(id)
    if (!state) return
    handlers.onRequest(body, state.abort.signal).then(
      (answer) => {
        if (inbound.get(id) !== state) return // cancelled meanwhile
        state.onSent = () => inbound.delete(id)
        enqueue(id, state, toChunks({ type: FrameType.Response, streamId: id, requestId: id }, answer))
      },
      (error: unknown) => {
        if (inbound.get(id) !== state) return
        inbound.delete(id)
        sendStreamError(id, error instanceof Error ? error.message : String(error))
      },
    )
  }

  function sendStreamError(id: number, text: string) {
    send({ type: FrameType.Error, more: false, streamId: id, requestId: id, payload: encodeJsonPayload({ reason: text }) })
  }

  function onControlFrame(frame: MeshFrame) {
    const id = frame.streamId
    switch (frame.type) {
      case FrameType.Credit: {
        const amount = parseCredit(frame.payload)
        if (!amount.ok) return violation(amount.error)
        const stream = id === CONTROL_STREAM_ID ? { window: connectionSend } : (outbound.get(id) ?? inbound.get(id))
        if (!stream) return // the stream finished while the credit was on its way
        const granted = stream.window.grant(amount.value)
        if (!granted.ok) return violation(granted.error)
        pump()
        return
      }
      case FrameType.Cancel: {
        const state = inbound.get(id)
        if (!state) return
        state.abort.abort()
        drop(id, state.queue)
        inbound.delete(id)
        reassembler.abort(id, id)
        return
      }
      case FrameType.Error: {
        const text = readReason(frame.payload)
        if (id === CONTROL_STREAM_ID) return finish({ reason: 'protocol', byPeer: true })
        const o = outbound.get(id)
        if (!o) return
        clearTimeout(o.timer)
        drop(id, o.queue)
        outbound.delete(id)
        reassembler.abort(id, id)
        o.reject(new TunnelError('PEER_ERROR', text))
        return
      }
      case FrameType.Goodbye: {
        const parsed = parseJsonPayload(frame.payload)
        const said = parsed.ok ? (parsed.value as { reason?: unknown }).reason : undefined
        const reason = said === 'draining' || said === 'stale' ? said : 'ended'
        return finish({ reason, byPeer: true })
      }
      case FrameType.Gossip:
      case FrameType.Ping:
      case FrameType.Pong: {
        const parsed = parseJsonPayload(frame.payload)
        if (!parsed.ok) return violation(parsed.error)
        handlers.onControl(frame.type, parsed.value)
        return
      }
      default:
        return violation(`unexpected frame type ${frame.type} on an open tunnel`)
    }
  }

  socket.on('message', (data: Buffer, isBinary: boolean) => {
    if (ended) return
    if (!isBinary) return violation('text message on a mesh tunnel')
    const opened = sealing.open(data)
    // no Error frame: whoever altered this one sits on the path and would drop or alter that too
    if (!opened.ok) return finish({ reason: opened.why, byPeer: false })
    const parsed = parseFrame(opened.frame)
    if (!parsed.ok) return violation(parsed.error)
    const frame = parsed.value
    if (frame.type === FrameType.Request || frame.type === FrameType.Response) onData(frame)
    else onControlFrame(frame)
  })
  socket.on('close', () => finish({ reason: 'lost', byPeer: false }))
  socket.on('error', () => finish({ reason: 'lost', byPeer: false }))

  return {
    peer,
    role,
    dialer: role === 'dialer' ? who.self : peer,
    request(body, timeoutMs) {
      if (ended) return Promise.reject(new TunnelError('CLOSED', `mesh tunnel to ${peer.slice(0, 12)} is closed (${ended.reason})`))
      if (outbound.size >= limits.maxOutboundRequests)
        return Promise.reject(new TunnelError('BUSY', `${outbound.size} mesh requests in flight to ${peer.slice(0, 12)}`))
      if (queuedBytes + body.byteLength > limits.maxQueuedBytes)
        return Promise.reject(new TunnelError('BUSY', `mesh send queue to ${peer.slice(0, 12)} is full`))
      const id = nextStream
      nextStream += 2
      return new Promise<Uint8Array>((resolve, reject) => {
        const timer = setTimeout(() => {
          const o = outbound.get(id)
          if (!o) return
          outbound.delete(id)
          drop(id, o.queue)
          reassembler.abort(id, id)
          if (!ended) send({ type: FrameType.Cancel, more: false, streamId: id, requestId: id, payload: new Uint8Array(0) })
          reject(new TunnelError('TIMEOUT', `mesh request ${id} to ${peer.slice(0, 12)} unanswered after ${timeoutMs} ms`))
        }, timeoutMs)
        const o: Outbound = { window: createSendWindow(), queue: [], receive: createReceiveWindow(), resolve, reject, timer }
        outbound.set(id, o)
        enqueue(id, o, toChunks({ type: FrameType.Request, streamId: id, requestId: id }, body))
      })
    },
    sendControl(type, json) {
      if (ended || socket.bufferedAmount > limits.controlBacklogBytes) return false
      send({ type, more: false, streamId: CONTROL_STREAM_ID, requestId: NO_REQUEST_ID, payload: encodeJsonPayload(json) })
      return true
    },
    goodbye(reason) {
      if (ended) return
      send({
        type: FrameType.Goodbye,
        more: false,
        streamId: CONTROL_STREAM_ID,
        requestId: NO_REQUEST_ID,
        payload: encodeJsonPayload({ reason }),
      })
      finish({ reason, byPeer: false })
    },
    closed,
    stats: () => ({ queuedBytes, outbound: outbound.size, inbound: inbound.size, bufferedAmount: socket.bufferedAmount }),
  }
}

function readReason(payload: Uint8Array): string {
  const parsed = parseJsonPayload(payload)
  const text = parsed.ok ? (parsed.value as { reason?: unknown } | null)?.reason : undefined
  return typeof text === 'string' ? text.slice(0, 500) : 'error: peer failed the request'
}
