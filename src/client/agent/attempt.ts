// One connection attempt of the agent client, made for each connect: from discovery to a registered
// connection, and on until that connection is lost. It owns what belongs to that connection: the socket (and
// the one opened beside discovery), the AUTH challenge, the handshake, heartbeats and watchdog, one-shot
// queries and the subscriptions as sent on it. dispose() ends all of it and drops the host, so nothing late
// of an old connection (a timer, a frame, an answer) can reach the client.
import type { NostrEvent } from '../../protocols/nip01/event.js'
import type { AgentState } from './agent-state.js'
import type { Announcer, Registration } from './announcer.js'
import { closeError, Transient } from './attempt-errors.js'
import { authenticate, discoverRelay, register } from './handshake.js'
import { Liveness, sayGoodbye } from './liveness.js'
import { OneShotQueries } from './one-shot-queries.js'
import { OpenSubscriptions } from './open-subscriptions.js'
import { type Inbound, OpeningSocket } from './opening-socket.js'
import type { ResolvedOptions } from './options.js'
import type { RelayProbe } from './relay-info.js'
import type { RelaySocket } from './relay-socket.js'
import type { AppSubscription, AppSubscriptions } from './subscriptions.js'
import type { WireFilter } from './wire-filter.js'

/** What an attempt reports to the client; only the attempt in force holds it. */
export interface AttemptHost {
  state(): AgentState
  discovered(probe: RelayProbe, relayIndex: number): void
  authenticated(): void
  /** registered: the connection is ACTIVE */
  registered(): void
  degraded(state: 'SUSPECT' | 'ZOMBIE', cause: string): void
  recovered(): void
  /** the attempt failed or its connection was lost; it is disposed by now */
  ended(error: unknown): void
}

/** What every attempt of one agent shares with the client: long-lived, it keeps no attempt alive. */
export interface AttemptDeps {
  o: ResolvedOptions
  announcer: Announcer
  subscriptions: AppSubscriptions
  newQueryId(): string
}

export class ConnectionAttempt {
  private host: AttemptHost | undefined
  private ended = false
  private opening: OpeningSocket
  private adopted: RelaySocket | undefined
  private queries: OneShotQueries | undefined
  private subs: OpenSubscriptions | undefined
  private liveness: Liveness | undefined
  private abort: (error: Error) => void = () => {}
  private readonly aborted = new Promise<never>((_, reject) => {
    this.abort = reject
  })
  private readonly inbound: Inbound = {
    // a one-shot query's frames first; the rest are the application's subscriptions'
    onEvent: (subId, event) => {
      if (!this.queries?.onEvent(subId, event)) this.subs?.onEvent(subId, event)
    },
    onEose: (subId) => {
      if (!this.queries?.onEose(subId)) this.subs?.onEose(subId)
    },
    onClosed: (subId, reason) => {
      if (!this.queries?.onClosed(subId, reason)) this.subs?.onClosed(subId, reason)
    },
    onClose: (code, reason) => this.end(closeError(code, reason)),
  }

  /** Starts at once; what becomes of it is reported to `host`. */
  constructor(
    private readonly deps: AttemptDeps,
    relayIndex: number,
    host: AttemptHost,
  ) {
    this.host = host
    this.aborted.catch(() => {})
    // the socket to the relay discovery asks first opens while its NIP-11 is read, so discovery costs no round
    // trip of its own; nothing is sent on it before the document fits, and it is closed unused otherwise
    this.opening = new OpeningSocket(deps.o.relays[relayIndex]!, deps.o, this.inbound)
    // a socket not yet adopted (discovery failed, signing threw, it closed early) goes with the attempt
    void this.connect(relayIndex).catch((error: unknown) => this.end(error))
  }

  /** the registered connection's socket; undefined before the handshake adopted it */
  get socket(): RelaySocket | undefined {
    return this.adopted
  }

  /** a subscription made while the connection is registered */
  open(sub: AppSubscription): void {
    this.subs?.send(sub)
  }

  unsubscribe(subId: string): void {
    this.subs?.close(subId)
  }

  query(filters: WireFilter[]): Promise<NostrEvent[]> {
    return this.queries ? this.queries.query(filters) : Promise.reject(new Error('the connection is not open'))
  }

  /** before the goodbye: no "online" heartbeat may follow it, and a silence during it is no reason to reconnect */
  quiet(): void {
    this.liveness?.stop()
  }

  /** presence "offline" (acknowledged, or tried four times), then every subscription CLOSEd */
  async goodbye(): Promise<void> {
    const socket = this.adopted
    if (!socket) return
    await sayGoodbye(socket, this.deps.announcer, this.deps.o.goodbyeTimeoutMs)
    for (const sub of this.deps.subscriptions.values()) socket.send(['CLOSE', sub.subId])
  }

  /** ends everything of this attempt and drops its connection without a closing handshake */
  dispose(): void {
    this.release()
    this.adopted?.terminate()
  }

  /** ends everything of this attempt; its connection closes with a closing handshake */
  async close(code: number, reason: string): Promise<void> {
    this.release()
    await this.adopted?.close(code, reason)
  }

  private async connect(relayIndex: number): Promise<void> {
    const { o, announcer } = this.deps
    // phase four's events are signed while a request is in flight, not after the AUTH: as soon as the socket
    // is open (NIP-11 may still be on its way), or once discovery is done; an attempt that reaches no relay
    // signs nothing
    let registration: Registration | undefined
    const signed = () => (registration ??= announcer.registration())
    this.opening.socket.then(
      () => {
        if (this.ended) return
        try {
          signed()
        } catch {
          // thrown again below, where the attempt fails with it
        }
      },
      () => {},
    )
    const discovered = await this.step(discoverRelay(o, relayIndex))
    const { probe } = discovered
    this.host?.discovered(probe, discovered.relayIndex)
    // stopped by a state$ subscriber meanwhile: no socket may open after the attempt ended
    if (this.ended) return
    if (this.opening.url !== probe.url) {
      this.opening.discard()
      this.opening = new OpeningSocket(probe.url, o, this.inbound)
    }
    signed()
    const socket = await this.step(this.opening.socket)
    this.opening.adopt()
    this.adopt(socket, probe)
    await this.handshake(socket, probe, signed())
  }

  private adopt(socket: RelaySocket, probe: RelayProbe): void {
    const { o, subscriptions, newQueryId } = this.deps
    this.adopted = socket
    const queries = new OneShotQueries(socket, o.clock, o.okTimeoutMs, newQueryId)
    this.queries = queries
    this.subs = new OpenSubscriptions(socket, { o, subscriptions, limits: probe, query: (filters) => queries.query(filters) })
  }

  private async handshake(socket: RelaySocket, probe: RelayProbe, registration: Registration): Promise<void> {
    const { o, announcer, subscriptions } = this.deps
    const challenge = await this.step(this.opening.awaitChallenge())
    // the AUTH and phase four's events leave together (see register)
    const authenticated = authenticate(socket, o, probe.url, challenge)
    authenticated.catch(() => {})
    const registered = register(socket, o, announcer, registration, authenticated)
    registered.catch(() => {})
    await this.step(authenticated)
    this.host?.authenticated()
    await this.step(registered)
    for (const sub of subscriptions.values()) this.subs?.send(sub)
    this.liveness = new Liveness(socket, o, announcer, probe.leaseSeconds, {
      state: () => this.host?.state() ?? 'CLOSED',
      degraded: (state, cause) => this.host?.degraded(state, cause),
      recovered: () => this.host?.recovered(),
      timedOut: (cause) => this.end(new Transient(cause)),
    })
    this.host?.registered()
  }

  /** a handshake step; throws once the attempt was disposed, so an ended attempt goes no further */
  private async step<T>(p: Promise<T>): Promise<T> {
    const value = await Promise.race([p, this.aborted])
    if (this.ended) throw new Transient('the attempt ended')
    return value
  }

  /** the attempt failed or its connection was lost: disposed, then the host hears why (once) */
  private end(error: unknown): void {
    const host = this.host
    this.dispose()
    host?.ended(error)
  }

  private release(): void {
    this.ended = true
    this.host = undefined
    this.abort(new Transient('the attempt ended'))
    this.opening.end()
    this.liveness?.stop()
    this.subs?.end()
    this.queries?.end()
  }
}
