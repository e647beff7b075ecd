// One WebSocket to one relay: frames in, frames out, OK answers matched to their event ids. It knows nothing
// of states or retries; the agent client decides what a close or a silence means.
import WebSocket from 'ws'
import type { NostrEvent } from '../../protocols/nip01/event.js'
import type { AgentClock } from './clock.js'

export interface OkAnswer {
  accepted: boolean
  message: string
}

export interface SocketHandlers {
  onEvent(subId: string, event: NostrEvent): void
  onEose(subId: string): void
  onClosed(subId: string, reason: string): void
  onAuthChallenge(challenge: string): void
  /** after open only; `reason` is the relay's close reason ('blocked: ...' for a ban) */
  onClose(code: number, reason: string): void
}

export class SocketGone extends Error {
  constructor(readonly beforeWrite: boolean) {
    super(beforeWrite ? 'the connection was gone before the write' : 'the connection closed before the answer')
    this.name = 'SocketGone'
  }
}

export class RelaySocket {
  lastInboundMs: number
  private readonly okWaiters = new Map<string, ((a: OkAnswer | SocketGone) => void)[]>()
  private closed = false

  private constructor(
    private readonly ws: WebSocket,
    private readonly clock: AgentClock,
    private readonly handlers: SocketHandlers,
  ) {
    this.lastInboundMs = clock.now()
    ws.on('message', (data) => this.onMessage(String(data)))
    // a relay's ping (every 30 s on Apiary) proves the path is alive as much as a frame does
    ws.on('ping', () => {
      this.lastInboundMs = clock.now()
    })
    ws.on('pong', () => {
      this.lastInboundMs = clock.now()
    })
    // `ws` emits `error` and then `close`; the close does the work
    ws.on('error', () => {})
    ws.on('close', (code, why) => this.onSocketClose(code, why.toString()))
  }

  /**
   * Resolves once open; rejects on refusal, error or timeout (the socket is then terminated). `localAddress`:
   * the local IP the connection binds to (the system's choice when undefined).
   */
  static open(url: string, clock: AgentClock, timeoutMs: number, handlers: SocketHandlers, localAddress?: string): Promise<RelaySocket> {
    const ws = new WebSocket(url, { handshakeTimeout: timeoutMs, ...(localAddress === undefined ? {} : { localAddress }) })
    return new Promise((resolve, reject) => {
      // frames that arrive with the open (the AUTH challenge) must not be missed: listen before resolving
      const socket = new RelaySocket(ws, clock, handlers)
      const fail = (error: Error) => {
        socket.closed = true
        ws.off('open', opened)
        ws.terminate()
        reject(error)
      }
      const refused = (_req: unknown, res: { statusCode?: number }) => fail(new Error(`${url} refused the upgrade: HTTP ${res.statusCode}`))
      const errored = (error: Error) => fail(new Error(`cannot connect to ${url}: ${error.message}`, { cause: error }))
      const opened = () => {
        ws.off('unexpected-response', refused)
        ws.off('error', errored)
        resolve(socket)
      }
      ws.once('open', opened)
      ws.once('unexpected-response', refused)
      ws.once('error', errored)
    })
  }

  get isOpen(): boolean {
    return !this.closed && this.ws.readyState === WebSocket.OPEN
  }

  /** false when the socket was already gone: nothing was written */
  send(frame: unknown[]): boolean {
    if (!this.isOpen) return false
    this.ws.send(JSON.stringify(frame))
    return true
  }

  /** EVENT or AUTH, then its OK; rejects with SocketGone, or resolves undefined after `timeoutMs` */
  sendAndAwaitOk(verb: 'EVENT' | 'AUTH', event: NostrEvent, timeoutMs: number): Promise<OkAnswer | undefined> {
    return new Promise((resolve, reject) => {
      const waiters = this.okWaiters.get(event.id) ?? []
      const timer = this.clock.setTimeout(() => settle(undefined), timeoutMs)
      const settle = (a: OkAnswer | SocketGone | undefined) => {
        this.clock.clearTimeout(timer)
        const list = this.okWaiters.get(event.id)
        const i = list?.indexOf(settle) ?? -1
        if (list && i >= 0) list.splice(i, 1)
        if (list?.length === 0) this.okWaiters.delete(event.id)
        if (a instanceof SocketGone) reject(a)
        else resolve(a)
      }
      waiters.push(settle)
      this.okWaiters.set(event.id, waiters)
      if (!this.send([verb, event])) settle(new SocketGone(true))
    })
  }

  close(code = 1000, reason = ''): Promise<void> {
    return new Promise((resolve) => {
      if (this.ws.readyState === WebSocket.CLOSED) return resolve()
      this.ws.once('close', () => resolve())
      this.ws.close(code, reason)
      // a peer that never answers the closing handshake must not hold stop() for ws's 30 s
      const linger = this.clock.setTimeout(() => this.ws.terminate(), 2000)
      this.ws.once('close', () => this.clock.clearTimeout(linger))
    })
  }

  /** a half-open socket never completes a closing handshake: drop it without one */
  terminate(): void {
    this.ws.terminate()
  }

  private onMessage(text: string): void {
    this.lastInboundMs = this.clock.now()
    let f: unknown
    try {
      f = JSON.parse(text)
    } catch {
      return // not NIP-01: nothing to act on
    }
    if (!Array.isArray(f) || typeof f[0] !== 'string') return
    switch (f[0]) {
      case 'EVENT':
        if (typeof f[1] === 'string' && isEventShape(f[2])) this.handlers.onEvent(f[1], f[2])
        return
      case 'OK':
        if (typeof f[1] === 'string') this.answer(f[1], { accepted: f[2] === true, message: typeof f[3] === 'string' ? f[3] : '' })
        return
      case 'EOSE':
        if (typeof f[1] === 'string') this.handlers.onEose(f[1])
        return
      case 'CLOSED':
        if (typeof f[1] === 'string') this.handlers.onClosed(f[1], typeof f[2] === 'string' ? f[2] : '')
        return
      case 'AUTH':
        if (typeof f[1] === 'string') this.handlers.onAuthChallenge(f[1])
        return
    }
  }

  private answer(id: string, a: OkAnswer | SocketGone): void {
    for (const settle of [...(this.okWaiters.get(id) ?? [])]) settle(a)
  }

  private onSocketClose(code: number, reason: string): void {
    if (this.closed) return
    this.closed = true
    for (const id of [...this.okWaiters.keys()]) this.answer(id, new SocketGone(false))
    this.handlers.onClose(code, reason)
  }
}

const isEventShape = (e: unknown): e is NostrEvent =>
  typeof e === 'object' &&
  e !== null &&
  typeof (e as NostrEvent).id === 'string' &&
  typeof (e as NostrEvent).pubkey === 'string' &&
  typeof (e as NostrEvent).created_at === 'number' &&
  typeof (e as NostrEvent).kind === 'number' &&
  Array.isArray((e as NostrEvent).tags)
