// Opening a tunnel: the Hello exchange of protocols/mesh/hello.ts on a WebSocket, on both sides,
// and only then the tunnel itself (tunnel.ts). Written with callbacks, not awaits, on purpose: `ws` emits
// every message of one TCP read synchronously, so a request sent right behind the last handshake frame would
// be emitted before an awaited continuation could attach the tunnel's listener, and lost. Here the tunnel is
// opened inside the listener that read the last handshake frame, before the next message is emitted.
import { randomBytes } from 'node:crypto'
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https'
import { createServer as createNetServer, Server as NetServer, type Socket } from 'node:net'
import { WebSocket, WebSocketServer } from 'ws'
import {
  CONTROL_STREAM_ID,
  encodeFrame,
  encodeJsonPayload,
  FRAME_HEADER_BYTES,
  FrameType,
  MAX_FRAME_PAYLOAD_BYTES,
  NO_REQUEST_ID,
  parseFrame,
  parseJsonPayload,
} from '../../protocols/mesh/frames.js'
import {
  checkProof,
  type Hello,
  type MeshIdentity,
  parseHello,
  parseHelloProof,
  proveRuntime,
  toHello,
} from '../../protocols/mesh/hello.js'
import { reason } from '../../protocols/reasons.js'
import type { Result } from '../../protocols/result.js'
import type { HelloBudget } from './hello-budget.js'
import { DEFAULT_TUNNEL_LIMITS, openTunnel, type Tunnel, TunnelError, type TunnelHandlers, type TunnelLimits } from './tunnel.js'
import { deriveTunnelSeal, SEAL_OVERHEAD_BYTES } from './tunnel-seal.js'

export interface TunnelSetup {
  identity: MeshIdentity
  anchorRelayPubkey: string
  /** what serves the requests and control frames of a tunnel to `peer` */
  handlersFor(peer: string): TunnelHandlers
  limits?: TunnelLimits
  handshakeTimeoutMs?: number
  /**
   * Acceptor: each Hello is charged to the IP it came from, before anything costly (a signature check, our
   * proof's signature): a stranger's Hellos must stay cheap to refuse. One past the budget is dropped unread,
   * and so is a connection from an IP whose budget is spent.
   */
  helloBudget?: HelloBudget
  /** Acceptor: is `runtime` in the readiness registry? A Hello naming another is refused before any signature check. */
  isKnownRuntime?(runtime: string): boolean
  /** Dialer: PEM CA(s) a `wss://` peer's certificate must chain to; absent = the system CAs */
  tlsCa?: string
}

/** PEM certificate (chain) and key the tunnel server serves TLS with: its endpoint is then `wss://`. */
export interface TunnelTls {
  cert: string
  key: string
}

/** Why an acceptor refused a Hello: the label of the refusal's count (apiary_mesh_hellos_refused_total). */
export type HelloRefusal = 'rate-limited' | 'unknown-runtime' | 'invalid' | 'tls'

/** One sealed frame: no mesh message is larger, so ws refuses anything more before it is buffered. */
export const MAX_MESSAGE_BYTES = FRAME_HEADER_BYTES + MAX_FRAME_PAYLOAD_BYTES + SEAL_OVERHEAD_BYTES
const DEFAULT_HANDSHAKE_TIMEOUT_MS = 5_000

const newNonce = () => randomBytes(32).toString('hex')

function sendJson(socket: WebSocket, type: FrameType, json: unknown) {
  socket.send(encodeFrame({ type, more: false, streamId: CONTROL_STREAM_ID, requestId: NO_REQUEST_ID, payload: encodeJsonPayload(json) }))
}

/** The JSON of a handshake frame of `type`; anything else is a refusal. */
function readHandshake(data: Buffer, isBinary: boolean, type: FrameType): Result<unknown, string> {
  if (!isBinary) return { ok: false, error: 'invalid: text message on a mesh tunnel' }
  const frame = parseFrame(new Uint8Array(data.buffer, data.byteOffset, data.byteLength))
  if (!frame.ok) return frame
  const { type: got, payload } = frame.value
  if (got === FrameType.Goodbye || got === FrameType.Error) {
    const said = parseJsonPayload(payload)
    const reason = said.ok ? (said.value as { reason?: unknown } | null)?.reason : undefined
    const text = typeof reason === 'string' ? reason.slice(0, 200) : 'no reason'
    return {
      ok: false,
      error:
        got === FrameType.Goodbye && reason === 'stale'
          ? 'stale: the peer says this endpoint is another runtime'
          : `error: mesh peer refused the handshake (${text})`,
    }
  }
  if (got !== type) return { ok: false, error: `invalid: expected frame type ${type}, got ${got}` }
  return parseJsonPayload(frame.value.payload)
}

/** The peer's Hello in a handshake message, attested by our anchor and not from ourselves. */
function readPeerHello(data: Buffer, isBinary: boolean, anchorRelayPubkey: string, self: string): Result<Hello, string> {
  const json = readHandshake(data, isBinary, FrameType.Hello)
  return json.ok ? parseHello(json.value, anchorRelayPubkey, self) : json
}

/** Runs `step` on each message until it returns a tunnel or a refusal; times out after `ms`. */
/** A step's answer: close the socket at once, send nothing, and reject with SPENT. */
const DROP = Symbol('drop')
const SPENT = reason('rate-limited', 'too many mesh hellos from this address')
// one error for every drop: a stranger's flood should not pay for a stack trace per Hello
const SPENT_ERROR = new TunnelError('HANDSHAKE', SPENT)

function handshake(
  socket: WebSocket,
  ms: number,
  steps: ((data: Buffer, isBinary: boolean) => Tunnel | string | typeof DROP | undefined)[],
): Promise<Tunnel> {
  return new Promise((resolve, reject) => {
    let i = 0
    const fail = (why: string, goodbye?: 'stale') => {
      cleanup()
      if (goodbye) sendJson(socket, FrameType.Goodbye, { reason: goodbye })
      else if (socket.readyState === WebSocket.OPEN) sendJson(socket, FrameType.Error, { reason: why })
      socket.close()
      reject(new TunnelError('HANDSHAKE', why))
    }
    const timer = setTimeout(() => fail(`invalid: mesh handshake not finished within ${ms} ms`), ms)
    const onMessage = (data: Buffer, isBinary: boolean) => {
      const out = steps[i++]?.(data, isBinary)
      if (out === DROP) {
        cleanup()
        socket.terminate()
        reject(SPENT_ERROR)
      } else if (typeof out === 'string') fail(out, out.startsWith('stale') ? 'stale' : undefined)
      else if (out) {
        cleanup()
        resolve(out)
      }
    }
    const onClose = () => fail('error: mesh peer closed during the handshake')
    const cleanup = () => {
      clearTimeout(timer)
      socket.off('message', onMessage)
      socket.off('close', onClose)
    }
    socket.on('message', onMessage)
    socket.on('close', onClose)
    socket.on('error', () => {})
  })
}

/** Dial `expectedPeer` at `endpoint`; resolves once both sides proved their runtime keys. */
export function dialTunnel(endpoint: string, expectedPeer: string, setup: TunnelSetup): Promise<Tunnel> {
  const { identity, anchorRelayPubkey } = setup
  const self = identity.runtimeKey.pubkey
  const socket = new WebSocket(endpoint, {
    maxPayload: MAX_MESSAGE_BYTES,
    perMessageDeflate: false,
    handshakeTimeout: setup.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS,
    ...(setup.tlsCa === undefined ? {} : { ca: setup.tlsCa }),
  })
  const nonce = newNonce()
  return new Promise<Tunnel>((resolve, reject) => {
    socket.once('error', (e) => reject(new TunnelError('HANDSHAKE', `error: mesh dial to ${endpoint} failed (${e.message})`)))
    socket.once('open', () => {
      sendJson(socket, FrameType.Hello, toHello(identity, nonce, { to: expectedPeer }))
      handshake(socket, setup.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS, [
        (data, isBinary) => {
          const hello = readPeerHello(data, isBinary, anchorRelayPubkey, self)
          if (!hello.ok) return hello.error
          if (hello.value.runtime !== expectedPeer) return `stale: ${endpoint} is now runtime ${hello.value.runtime.slice(0, 12)}`
          const proved = checkProof(hello.value.proof, 'acceptor', nonce, hello.value.runtime, self)
          if (!proved.ok) return proved.error
          sendJson(socket, FrameType.HelloProof, { proof: proveRuntime(identity, 'dialer', hello.value.nonce, expectedPeer) })
          const sealing = deriveTunnelSeal({
            role: 'dialer',
            secretKey: identity.runtimeKey.secretKey,
            self,
            peer: expectedPeer,
            dialerNonce: nonce,
            acceptorNonce: hello.value.nonce,
          })
          return openTunnel(
            socket,
            { self, peer: expectedPeer, role: 'dialer' },
            setup.handlersFor(expectedPeer),
            sealing,
            setup.limits ?? DEFAULT_TUNNEL_LIMITS,
          )
        },
      ]).then(resolve, reject)
    })
  })
}

/** The runtime a Hello names, read without checking anything else (that comes after the cheap gates). */
function namedRuntime(json: unknown): string | undefined {
  const runtime = (json as { runtime?: unknown } | null)?.runtime
  return typeof runtime === 'string' ? runtime : undefined
}

/**
 * Accept tunnels on `server`'s connections; `onTunnel` gets each one that completed its handshake. A Hello is
 * judged cheapest check first: the IP's budget, then a runtime the registry lists, and only then signatures.
 */
export function acceptTunnels(
  server: WebSocketServer,
  setup: TunnelSetup,
  onTunnel: (t: Tunnel) => void,
  onRefused: (why: string, refusal: HelloRefusal) => void,
): void {
  const { identity, anchorRelayPubkey } = setup
  const self = identity.runtimeKey.pubkey
  const budget = setup.helloBudget
  server.on('connection', (socket, request) => {
    const ip = request.socket.remoteAddress ?? 'unknown'
    // dropped, not answered: an Error frame and a close handshake would cost more than the stranger's connection
    if (budget?.spent(ip)) {
      socket.terminate()
      return onRefused(SPENT, 'rate-limited')
    }
    const nonce = newNonce()
    let dialer: Hello | undefined
    let refusal: HelloRefusal = 'invalid'
    const refuse = <T extends string | typeof DROP>(kind: HelloRefusal, why: T): T => {
      refusal = kind
      return why
    }
    handshake(socket, setup.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS, [
      (data, isBinary) => {
        if (budget && !budget.admit(ip)) return refuse('rate-limited', DROP)
        const json = readHandshake(data, isBinary, FrameType.Hello)
        if (!json.ok) return json.error
        const runtime = namedRuntime(json.value)
        if (runtime !== undefined && setup.isKnownRuntime && !setup.isKnownRuntime(runtime))
          return refuse('unknown-runtime', reason('restricted', `runtime ${runtime.slice(0, 12)} is not in the readiness registry`))
        const hello = parseHello(json.value, anchorRelayPubkey, self)
        if (!hello.ok) return hello.error
        if (hello.value.to !== self) return `stale: this endpoint is runtime ${self.slice(0, 12)}`
        dialer = hello.value
        sendJson(
          socket,
          FrameType.Hello,
          toHello(identity, nonce, { proof: proveRuntime(identity, 'acceptor', dialer.nonce, dialer.runtime) }),
        )
        return undefined
      },
      (data, isBinary) => {
        const json = readHandshake(data, isBinary, FrameType.HelloProof)
        if (!json.ok || !dialer) return json.ok ? 'invalid: hello proof before hello' : json.error
        const proof = parseHelloProof(json.value)
        if (!proof.ok) return proof.error
        const proved = checkProof(proof.value, 'dialer', nonce, dialer.runtime, self)
        if (!proved.ok) return proved.error
        const sealing = deriveTunnelSeal({
          role: 'acceptor',
          secretKey: identity.runtimeKey.secretKey,
          self,
          peer: dialer.runtime,
          dialerNonce: dialer.nonce,
          acceptorNonce: nonce,
        })
        return openTunnel(
          socket,
          { self, peer: dialer.runtime, role: 'acceptor' },
          setup.handlersFor(dialer.runtime),
          sealing,
          setup.limits ?? DEFAULT_TUNNEL_LIMITS,
        )
      },
    ]).then(onTunnel, (e: Error) => onRefused(e.message, refusal))
  })
}

export interface TunnelServer {
  port: number
  close(): Promise<void>
}

/**
 * A WebSocket server on `host:port` (0 = any free port) that accepts tunnels; over TLS when `tls` is given.
 * Over TLS, an IP whose Hello budget is spent is dropped before any TLS work, and a connection that fails the
 * TLS handshake (a plaintext dialer, a certificate the dialer refused) is a counted `tls` refusal charged to
 * its IP's budget.
 */
export async function startTunnelServer(
  host: string,
  port: number,
  setup: TunnelSetup,
  onTunnel: (t: Tunnel) => void,
  onRefused: (why: string, refusal: HelloRefusal) => void,
  tls?: TunnelTls,
): Promise<TunnelServer> {
  const options = { maxPayload: MAX_MESSAGE_BYTES, perMessageDeflate: false }
  const https = tls ? createHttpsServer({ cert: tls.cert, key: tls.key }) : undefined
  const server = https ? new WebSocketServer({ server: https, ...options }) : new WebSocketServer({ host, port, ...options })
  // TLS connections the gate handed on, ended by close(): one still in its handshake must not hold a shutdown
  const handedOn = new Set<Socket>()
  const listener = https ? gateTls(https, handedOn, setup.helloBudget, onRefused) : server
  await new Promise<void>((resolve, reject) => {
    listener.once('listening', resolve)
    listener.once('error', reject)
    if (listener instanceof NetServer) listener.listen(port, host)
  })
  acceptTunnels(server, setup, onTunnel, onRefused)
  const address = listener.address()
  return {
    port: typeof address === 'object' && address ? address.port : port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of server.clients) client.terminate()
        if (!https) return server.close(() => resolve())
        server.close()
        listener.close(() => resolve())
        for (const socket of handedOn) socket.destroy()
      }),
  }
}

/**
 * The TCP listener in front of a TLS tunnel server: it hands the TLS server (by its documented `connection`
 * event) only the connections of IPs with budget left, so a spent IP costs no TLS handshake.
 */
function gateTls(
  https: HttpsServer,
  handedOn: Set<Socket>,
  budget: HelloBudget | undefined,
  onRefused: (why: string, refusal: HelloRefusal) => void,
): NetServer {
  // typed with a Duplex; on a TLS server it is the TLS socket of one TCP connection
  https.on('tlsClientError', (error: Error, socket: Socket) => {
    // no address left when the dialer hung up first (it refused our certificate): counted, not charged
    if (socket.remoteAddress !== undefined) budget?.admit(socket.remoteAddress)
    onRefused(reason('invalid', `mesh TLS handshake failed (${error.message.slice(0, 200)})`), 'tls')
    socket.destroy()
  })
  return createNetServer((socket) => {
    if (budget?.spent(socket.remoteAddress ?? 'unknown')) {
      socket.destroy()
      return onRefused(SPENT, 'rate-limited')
    }
    handedOn.add(socket)
    socket.once('close', () => handedOn.delete(socket))
    https.emit('connection', socket)
  })
}
