// The agent client (DESIGN §13, issue 11): one agent's connection to the registry, kept alive by itself.
// State: the lifecycle INIT → DISCOVERED → AUTHENTICATED → ACTIVE → SUSPECT → ZOMBIE → CLOSED, one socket,
// the application's subscriptions and the outbound guard. Longer than ~250 lines because it is the state
// machine; the pieces it drives (backoff, throttle, queue, dedup, wire format, socket) are the agent-*.ts beside it.
import { BehaviorSubject, type Observable } from 'rxjs'
import { spreadBackoffDelayMs } from '../../protocols/backoff.js'
import { type NostrEvent, verifyEventWasm } from '../../protocols/nip01/event.js'
import { KIND_AUTH } from '../../protocols/nip01/kinds.js'
import { type EventTemplate, signTemplate } from '../../protocols/nip01/sign.js'
import { prefixOf } from '../../protocols/reasons.js'
import { isPaged, MAX_BACKLOG_PAGES, type PageTally, pageBacklog, tallyEvent, toTally } from './backlog.js'
import { parseRetryAfterMs, ReconnectSchedule } from './backoff.js'
import type { TimerHandle } from './clock.js'
import { AgentError } from './error.js'
import { InboundDedup } from './inbound-dedup.js'
import { InboundLimits } from './inbound-limits.js'
import { type AgentClientOptions, type ResolvedOptions, resolveOptions } from './options.js'
import { type PublishCounters, Publisher, type PublishResult } from './publisher.js'
import {
  announcementTemplate,
  type DiscoveredAgent,
  heartbeatTemplate,
  KIND_ANNOUNCEMENT,
  KIND_PRESENCE,
  toDiscovered,
} from './registry-wire.js'
import { DEFAULT_LEASE_SECONDS, probeRelay, type RelayProbe } from './relay-info.js'
import { type OkAnswer, RelaySocket, type SocketHandlers } from './relay-socket.js'
import { type AppSubscription, reqFiltersOf, resumeSinceOf, type SubscribeOptions, type WireFilter } from './subscriptions.js'
import { watchCapability } from './watch.js'

export type AgentState = 'INIT' | 'DISCOVERED' | 'AUTHENTICATED' | 'ACTIVE' | 'SUSPECT' | 'ZOMBIE' | 'CLOSED'

export interface AgentStateChange {
  state: AgentState
  cause?: string
  /** on CLOSED after a terminal error */
  error?: AgentError
}

/** The publisher's counters (sent, failed, throttled, retried, queued, waitedSeconds), and the connection's. */
export interface AgentMetrics extends PublishCounters {
  reconnects: number
  state: AgentState
  /** events waiting in the offline queue now */
  queueLength: number
  /** queued events dropped, oldest first, past the queue's bounds */
  dropped: number
  /** inbound events not handed to the application again */
  deduplicated: number
  /** inbound events over an inbound limit, not handed to the application */
  inboundSkipped: number
}

/** A failure worth another connection attempt, after the backoff (and at least `retryAfterMs`). */
class Transient extends Error {
  constructor(
    message: string,
    readonly retryAfterMs = 0,
  ) {
    super(message)
  }
}

/** the share of a heartbeat interval taken off at random (see heartbeatIntervalMs) */
const HEARTBEAT_JITTER = 0.1

/** Discovery found no relay answering NIP-11: counts toward maxDiscoveryRounds before the first ACTIVE. */
class DiscoveryRoundFailed extends Transient {}

/** A connection being opened for one attempt (see openSocket). */
interface OpeningSocket {
  url: string
  socket: Promise<RelaySocket>
  /** the attempt goes on with this socket; throws what a close before now means (see closeError) */
  adopt(): void
  discard(): void
}

/** Phase four's two events: the capabilities announcement and the first heartbeat. */
interface Registration {
  announcement: NostrEvent
  heartbeat: NostrEvent
}

const LIVE: ReadonlySet<AgentState> = new Set(['ACTIVE', 'SUSPECT', 'ZOMBIE'])

const QUERY_TIMED_OUT = 'error: no EOSE in time'

/** the prefix of a publish answered after a terminal error: who can fix what closed the agent */
const TERMINAL_PREFIX: Record<AgentError['code'], string> = {
  blocked: 'blocked',
  restricted: 'restricted',
  'auth-rejected': 'invalid',
  incompatible: 'error',
  'discovery-failed': 'error',
}

export class AgentClient {
  readonly pubkey: string
  readonly state$: Observable<AgentStateChange>
  private readonly o: ResolvedOptions
  private readonly states: BehaviorSubject<AgentStateChange>
  private readonly schedule: ReconnectSchedule
  private readonly publisher: Publisher
  private readonly dedup: InboundDedup
  private readonly limits: InboundLimits | undefined
  private readonly subs = new Map<string, AppSubscription>()
  private readonly watches = new Set<() => void>()
  private readonly queries = new Map<string, { events: NostrEvent[]; done: (closed?: string) => void }>()
  private socket: RelaySocket | undefined
  private probe: RelayProbe | undefined
  /** bumped by every connection attempt, stop and terminal error: callbacks of an older attempt are ignored */
  private generation = 0
  private reconnectTimer: TimerHandle | undefined
  private heartbeatTimer: TimerHandle | undefined
  private watchdogTimer: TimerHandle | undefined
  private abortHandshake: ((e: Error) => void) | undefined
  private challenge: { value?: string; wake?: () => void; timer?: TimerHandle } = {}
  /** the connection the current attempt is opening (see openSocket) */
  private opening: OpeningSocket | undefined
  private starting: { resolve: () => void; reject: (e: Error) => void } | undefined
  private startPromise: Promise<void> | undefined
  private everActive = false
  private discoveryFailures = 0
  private reconnects = 0
  private relayIndex = 0
  private stopping = false
  /** the publish answer after a terminal error, with the prefix of the refusal that caused it */
  private terminalReason: string | undefined
  private subCounter = 0
  private load: number | undefined
  private announcedLoad: number | undefined
  private lastAnnouncedAt = 0

  constructor(options: AgentClientOptions) {
    this.o = resolveOptions(options)
    this.pubkey = this.o.key.pubkey
    this.states = new BehaviorSubject<AgentStateChange>({ state: 'INIT', cause: 'created' })
    this.state$ = this.states.asObservable()
    this.schedule = new ReconnectSchedule(this.o.reconnect, this.o.reconnect.stableMs, this.o.random)
    this.dedup = new InboundDedup(this.o.dedup)
    this.limits = this.o.inboundLimits ? new InboundLimits(this.o.inboundLimits) : undefined
    this.publisher = new Publisher(this.o, () => (this.state === 'ACTIVE' ? this.socket : undefined))
  }

  get state(): AgentState {
    return this.states.value.state
  }

  /** Resolves at the first ACTIVE; rejects with AgentError when the agent must not retry (it is then CLOSED). */
  start(): Promise<void> {
    if (this.startPromise) return this.startPromise
    if (this.stopping || this.state === 'CLOSED')
      return Promise.reject(new Error('a stopped agent cannot be started again; create a new AgentClient'))
    this.startPromise = new Promise<void>((resolve, reject) => {
      this.starting = { resolve, reject }
    })
    void this.connect()
    return this.startPromise
  }

  /** Signs and sends; keeps the template's created_at. Never rejects. */
  async publish(t: EventTemplate): Promise<PublishResult> {
    let event: NostrEvent
    try {
      event = signTemplate(this.o.key, t, this.nowSeconds())
    } catch (error) {
      return { ok: false, id: '', reason: `invalid: cannot sign the template: ${(error as Error).message}` }
    }
    if (this.stopping || this.state === 'CLOSED') return { ok: false, id: event.id, reason: this.closedReason() }
    return this.publisher.publish(event)
  }

  /**
   * NIP-01 filters; events reach `onEvent` once each, across reconnects. `options.onClosed` hears of a relay
   * refusing the subscription for good. Returns the unsubscribe.
   */
  subscribe(filters: WireFilter[], onEvent: (event: NostrEvent) => void, options: SubscribeOptions = {}): () => void {
    const sub: AppSubscription = {
      subId: `agent-${++this.subCounter}`,
      filters: filters.map((f) => ({ ...f })),
      onEvent,
      onClosed: options.onClosed,
      newestSeconds: undefined,
      liveSinceSeconds: undefined,
      errorsInRow: 0,
      reqRun: 0,
    }
    this.subs.set(sub.subId, sub)
    // before ACTIVE the handshake sends every subscription once it is registered
    if (this.socket && LIVE.has(this.state)) this.sendReq(this.socket, sub)
    return () => {
      if (!this.subs.delete(sub.subId)) return
      this.clearResend(sub)
      this.dedup.forget(sub.subId)
      this.socket?.send(['CLOSE', sub.subId])
    }
  }

  /** Live agents offering `capability`: announcements with a heartbeat within the relay's lease. */
  async discover(capability: string): Promise<DiscoveredAgent[]> {
    const socket = this.socket
    if (!socket || !LIVE.has(this.state)) throw new Error(`discover() needs a connected agent (state ${this.state})`)
    const announcements = await this.query(socket, [{ kinds: [KIND_ANNOUNCEMENT], '#c': [capability] }])
    const authors = [...new Set(announcements.map((e) => e.pubkey))]
    const heartbeats: NostrEvent[] = []
    // one filter's list holds at most 1000 values on Apiary
    for (let i = 0; i < authors.length; i += 500)
      heartbeats.push(...(await this.query(socket, [{ kinds: [KIND_PRESENCE], authors: authors.slice(i, i + 500) }])))
    return toDiscovered(announcements, heartbeats, this.probe?.leaseSeconds ?? DEFAULT_LEASE_SECONDS, this.o.clock.now())
  }

  /**
   * A live discover(): `onChange` gets the whole list of live agents offering `capability` whenever it
   * changes (arrivals, heartbeats, departures, leases running out). Returns the function that ends the watch.
   */
  watch(capability: string, onChange: (agents: DiscoveredAgent[]) => void): () => void {
    // a watch of a closed agent would tick forever for nothing
    if (this.state === 'CLOSED') return () => {}
    const end = watchCapability(capability, onChange, {
      subscribe: (filters, onEvent) => this.subscribe(filters, onEvent),
      leaseSeconds: () => this.probe?.leaseSeconds ?? DEFAULT_LEASE_SECONDS,
      clock: this.o.clock,
      tickMs: Math.min(1000, this.o.heartbeatMs),
    })
    this.watches.add(end)
    return () => {
      this.watches.delete(end)
      end()
    }
  }

  /** 0..1; re-announced with the next heartbeat when it changed (at most once per heartbeat). */
  setLoad(load: number): void {
    this.load = load
  }

  metrics(): AgentMetrics {
    return {
      ...this.publisher.counters,
      reconnects: this.reconnects,
      state: this.state,
      queueLength: this.publisher.queue.length,
      dropped: this.publisher.queue.dropped,
      deduplicated: this.dedup.dropped,
      inboundSkipped: this.limits?.skipped ?? 0,
    }
  }

  /** Graceful goodbye: no new work, in-flight publishes finish (bounded), presence "offline" ACKed, CLOSE, 1000. */
  async stop(): Promise<void> {
    if (this.state === 'CLOSED') {
      // closed by a terminal error: closeWith() released everything; this makes sure, and is cheap
      this.releaseAll(this.closedReason())
      return
    }
    if (this.stopping) return
    this.stopping = true
    this.clearReconnect()
    // no "online" heartbeat may follow the goodbye, and a silence during it is no reason to reconnect
    this.stopTimers()
    for (const end of this.watches) end()
    this.watches.clear()
    // publishes asleep in a throttle wait or a retry backoff settle now; those awaiting an OK get the bound
    this.publisher.close('error: the agent is stopped')
    const socket = this.socket
    if (socket?.isOpen && LIVE.has(this.state)) {
      let timer: TimerHandle | undefined
      const bound = new Promise<void>((resolve) => {
        timer = this.o.clock.setTimeout(resolve, this.o.goodbyeTimeoutMs)
      })
      await Promise.race([this.publisher.settled(), bound])
      if (timer !== undefined) this.o.clock.clearTimeout(timer)
      await this.sayGoodbye(socket)
      for (const subId of this.subs.keys()) socket.send(['CLOSE', subId])
    }
    this.releaseAll('error: the agent is stopped')
    this.socket = undefined
    await socket?.close(1000, 'goodbye')
    this.transition('CLOSED', 'stopped')
    this.starting?.reject(new Error('the agent was stopped before it became ACTIVE'))
    this.starting = undefined
  }

  // --- connecting -----------------------------------------------------------------------------------------

  private async connect(): Promise<void> {
    const gen = ++this.generation
    this.reconnectTimer = undefined
    // the socket to the relay discovery asks first opens while its NIP-11 is read, so discovery costs no round
    // trip of its own; nothing is sent on it before the document fits, and it is closed unused otherwise
    let opening = this.openSocket(this.o.relays[this.relayIndex]!, gen)
    this.opening = opening
    // phase four's events are signed while a request is in flight, not after the AUTH: as soon as the socket
    // is open (NIP-11 may still be on its way), or once discovery is done; an attempt that reaches no relay
    // signs nothing
    let registration: Registration | undefined
    const signed = () => (registration ??= this.signRegistration())
    opening.socket.then(
      () => {
        if (gen !== this.generation) return
        try {
          signed()
        } catch {
          // thrown again below, where the attempt fails with it
        }
      },
      () => {},
    )
    try {
      this.probe = await this.discoverRelay()
      if (gen !== this.generation) return opening.discard()
      this.discoveryFailures = 0
      this.transition(
        'DISCOVERED',
        `${this.probe.url} supports NIP-${this.probe.supportedNips.join(', ')}; lease ${this.probe.leaseSeconds} s`,
      )
      if (opening.url !== this.probe.url) {
        opening.discard()
        opening = this.openSocket(this.probe.url, gen)
        this.opening = opening
      }
      signed()
      const socket = await opening.socket
      if (gen !== this.generation) return socket.terminate()
      opening.adopt()
      this.socket = socket
      await this.handshake(socket, gen, signed())
    } catch (error) {
      // a socket not yet adopted (discovery failed, signing threw, it closed early) goes with the attempt
      opening.discard()
      if (gen === this.generation) this.onAttemptFailed(error)
    }
  }

  private async handshake(socket: RelaySocket, gen: number, registration: Registration): Promise<void> {
    const aborted = new Promise<never>((_, reject) => {
      this.abortHandshake = reject
    })
    aborted.catch(() => {})
    const step = <T>(p: Promise<T>): Promise<T> => Promise.race([p, aborted])
    const challenge = await step(this.awaitChallenge())
    // the AUTH and phase four's events leave together (see register)
    const authenticated = this.authenticate(socket, challenge)
    authenticated.catch(() => {})
    const registered = this.register(socket, registration, authenticated)
    registered.catch(() => {})
    await step(authenticated)
    if (gen !== this.generation) return
    this.transition('AUTHENTICATED', `NIP-42 as ${this.pubkey}`)
    await step(registered)
    if (gen !== this.generation) return
    for (const sub of this.subs.values()) this.sendReq(socket, sub)
    this.abortHandshake = undefined
    this.schedule.connected(this.o.clock.now())
    this.everActive = true
    this.transition('ACTIVE', `registered ${this.o.capabilities.map((c) => c.name).join(', ') || 'no capabilities'}`)
    this.starting?.resolve()
    this.starting = undefined
    this.scheduleHeartbeat(gen)
    this.scheduleWatchdog(gen)
    void this.publisher.flush()
  }

  /** Phase one: the first relay whose NIP-11 answers and fits, starting with the last one used (sticky). */
  private async discoverRelay(): Promise<RelayProbe> {
    const unreachable: string[] = []
    let incompatible: AgentError | undefined
    for (let i = 0; i < this.o.relays.length; i++) {
      const index = (this.relayIndex + i) % this.o.relays.length
      const url = this.o.relays[index]!
      try {
        const probe = await probeRelay(url, this.o.fetch, this.o.handshakeTimeoutMs)
        this.relayIndex = index
        return probe
      } catch (error) {
        if (error instanceof AgentError) incompatible ??= error
        else unreachable.push(`${url}: ${(error as Error).message}`)
      }
    }
    // every relay answered and none can host an agent: waiting will not change that
    if (incompatible && unreachable.length === 0) throw incompatible
    throw new DiscoveryRoundFailed(`no relay answered NIP-11 (${unreachable.join('; ')})`)
  }

  /**
   * A connection for attempt `gen`, opened beside discovery. Until the attempt adopts it, a close is kept for
   * adopt() to report (the attempt then fails with it, as a close during the handshake would). Discarded (opened
   * for a relay discovery did not choose, or the attempt ended first), its handlers fall silent at once and it
   * is terminated; an adopted one is the attempt's (this.socket), and discarding it changes nothing.
   */
  private openSocket(url: string, gen: number): OpeningSocket {
    this.challenge = {}
    let live = true
    let adopted = false
    let closedEarly: { code: number; reason: string } | undefined
    const ours = () => live && gen === this.generation
    const handlers: SocketHandlers = {
      onEvent: (subId, event) => ours() && this.onEvent(subId, event),
      onEose: (subId) => ours() && this.onEose(subId),
      onClosed: (subId, reason) => ours() && this.onSubClosed(subId, reason),
      onAuthChallenge: (value) => {
        if (!ours()) return
        this.challenge.value = value
        this.challenge.wake?.()
      },
      onClose: (code, reason) => {
        if (!ours()) return
        if (adopted) this.onSocketClose(code, reason)
        else closedEarly = { code, reason }
      },
    }
    // async: `ws` throws at once for a URL it cannot parse, which then fails the attempt like a refused connection
    const socket = (async () => RelaySocket.open(url, this.o.clock, this.o.handshakeTimeoutMs, handlers))().catch((error: Error) => {
      throw new Transient(error.message)
    })
    // observed when the attempt gets to it; it must not go unhandled before (discovery failed, signing threw)
    socket.catch(() => {})
    return {
      url,
      socket,
      adopt: () => {
        if (closedEarly) throw closeError(closedEarly.code, closedEarly.reason)
        adopted = true
      },
      discard: () => {
        if (!live || adopted) return
        live = false
        void socket.then(
          (s) => s.terminate(),
          () => {},
        )
      },
    }
  }

  /** Phase two: NIP-42 on every connect. A refusal for who we are is terminal; one for now is not. */
  private async authenticate(socket: RelaySocket, challenge: string): Promise<void> {
    // NIP-42: the URL we connected to; the relay compares it with its community's host
    const tags = [
      ['relay', this.probe?.url ?? ''],
      ['challenge', challenge],
    ]
    const auth = signTemplate(this.o.key, { kind: KIND_AUTH, content: '', tags }, this.nowSeconds())
    const answer = await socket.sendAndAwaitOk('AUTH', auth, this.o.handshakeTimeoutMs).catch(() => undefined)
    if (answer === undefined) throw new Transient('no answer to AUTH')
    if (!answer.accepted) throw refusal('AUTH', answer, 'auth-rejected')
  }

  private awaitChallenge(): Promise<string> {
    return new Promise((resolve, reject) => {
      const timer = this.o.clock.setTimeout(
        () => reject(new Transient(`no AUTH challenge within ${this.o.handshakeTimeoutMs} ms`)),
        this.o.handshakeTimeoutMs,
      )
      this.challenge.timer = timer
      const check = () => {
        if (this.challenge.value === undefined) return
        this.o.clock.clearTimeout(timer)
        this.challenge.wake = undefined
        this.challenge.timer = undefined
        resolve(this.challenge.value)
      }
      this.challenge.wake = check
      check()
    })
  }

  /** The events phase four sends, signed before they are needed (see connect). */
  private signRegistration(): Registration {
    return {
      announcement: this.announcement(),
      heartbeat: signTemplate(this.o.key, heartbeatTemplate('online'), this.nowSeconds()),
    }
  }

  /**
   * Phase four: the first heartbeat, which starts the lease, then the capabilities announcement, sent right
   * behind the AUTH without waiting for its OK. The relay applies one connection's frames in arrival order and
   * judges the frames behind an AUTH as the AUTH left the connection (frame-sequence.ts), so registering costs
   * no round trip of its own. The heartbeat goes first so the announcement is delivered live when it is stored
   * (docs/agent-registry.md). A refused AUTH is the handshake's error, not these events'; a relay that judged
   * them before the AUTH (`auth-required:`) gets them again, in the same order, once the AUTH is accepted.
   * Events signed more than a second before a slow handshake got here are signed again: the heartbeat's
   * created_at is where the lease that discovery reads begins.
   */
  private async register(socket: RelaySocket, signed: Registration, authenticated: Promise<void>): Promise<void> {
    const stale = this.nowSeconds() - signed.heartbeat.created_at > 1
    const { announcement, heartbeat } = stale ? this.signRegistration() : signed
    const steps: [NostrEvent, string][] = [
      [heartbeat, 'the first heartbeat'],
      [announcement, 'the capabilities announcement'],
    ]
    const answers = await Promise.all(steps.map(([event]) => this.sendForOk(socket, event)))
    await authenticated
    for (const [i, [event, what]] of steps.entries()) {
      let answer = answers[i]
      if (answer && !answer.accepted && prefixOf(answer.message) === 'auth-required') answer = await this.sendForOk(socket, event)
      if (answer === undefined) throw new Transient(`no OK for ${what}`)
      if (!answer.accepted) throw refusal(what, answer, 'restricted')
    }
  }

  private sendForOk(socket: RelaySocket, event: NostrEvent): Promise<OkAnswer | undefined> {
    return socket.sendAndAwaitOk('EVENT', event, this.o.handshakeTimeoutMs).catch(() => undefined)
  }

  private announcement(): NostrEvent {
    // a later announcement must win over an earlier one of the same second (ties go to the lowest id)
    const createdAt = Math.max(this.nowSeconds(), this.lastAnnouncedAt + (this.announcedLoad === this.load ? 0 : 1))
    this.lastAnnouncedAt = createdAt
    this.announcedLoad = this.load
    return signTemplate(
      this.o.key,
      { ...announcementTemplate(this.o.capabilities, this.o.version, this.load), created_at: createdAt },
      createdAt,
    )
  }

  private onAttemptFailed(error: unknown): void {
    // the terminated socket's close must not schedule a second attempt
    this.generation++
    this.abortHandshake = undefined
    const socket = this.socket
    this.socket = undefined
    socket?.terminate()
    if (error instanceof AgentError) this.closeWith(error)
    else if (error instanceof DiscoveryRoundFailed && !this.everActive && ++this.discoveryFailures >= this.o.maxDiscoveryRounds) {
      this.closeWith(
        new AgentError('discovery-failed', `${error.message}; gave up after ${this.discoveryFailures} rounds`, { cause: error }),
      )
    } else if (error instanceof Transient) this.scheduleReconnect(error.message, error.retryAfterMs)
    // a bug of ours must not end an agent that is meant to stay up: back off as for a network error
    else this.scheduleReconnect(`unexpected: ${(error as Error).message}`, 0)
  }

  private onSocketClose(code: number, reason: string): void {
    this.stopTimers()
    this.socket = undefined
    const error = closeError(code, reason)
    for (const sub of this.subs.values()) this.clearResend(sub)
    if (this.abortHandshake) this.abortHandshake(error)
    else if (error instanceof AgentError) this.closeWith(error)
    else this.scheduleReconnect(error.message, error.retryAfterMs)
  }

  /** The one timer that owns the reconnect schedule. */
  private scheduleReconnect(why: string, retryAfterMs: number): void {
    if (this.stopping) return
    this.clearReconnect()
    const delayMs = Math.round(this.schedule.failed(this.o.clock.now(), retryAfterMs))
    this.reconnects++
    this.transition('INIT', `${why}; reconnecting in ${delayMs} ms`)
    this.reconnectTimer = this.o.clock.setTimeout(() => void this.connect(), delayMs)
  }

  private closeWith(error: AgentError): void {
    const reason = `${TERMINAL_PREFIX[error.code]}: the agent is closed: ${error.message}`
    this.terminalReason = reason
    this.releaseAll(reason)
    const socket = this.socket
    this.socket = undefined
    socket?.terminate()
    this.transition('CLOSED', error.message, error)
    this.starting?.reject(error)
    this.starting = undefined
  }

  /**
   * Nothing of this agent may run after CLOSED: no attempt, heartbeat, watchdog, AUTH wait, subscription
   * re-send or watch tick, and no publish may stay waiting or claim `queued` (nothing will send it).
   */
  private releaseAll(reason: string): void {
    this.generation++
    // a socket opened beside a discovery that is still running (stop() meanwhile) is closed now, not after it
    this.opening?.discard()
    this.opening = undefined
    this.clearReconnect()
    this.stopTimers()
    this.abortHandshake?.(new Transient(reason))
    this.abortHandshake = undefined
    for (const sub of this.subs.values()) this.clearResend(sub)
    for (const end of this.watches) end()
    this.watches.clear()
    this.publisher.close(reason)
  }

  /** what a publish answers once the agent is CLOSED or stopping */
  private closedReason(): string {
    return this.terminalReason ?? 'error: the agent is stopped'
  }

  // --- heartbeat and silence ------------------------------------------------------------------------------

  /** Heartbeats go straight to the socket on their own timer: never behind the queue or a throttle. */
  private scheduleHeartbeat(gen: number): void {
    this.heartbeatTimer = this.o.clock.setTimeout(() => {
      const socket = this.socket
      if (gen !== this.generation || !socket) return
      const beat = signTemplate(this.o.key, heartbeatTemplate('online'), this.nowSeconds())
      void socket.sendAndAwaitOk('EVENT', beat, this.o.heartbeatMs).catch(() => undefined)
      if (this.load !== this.announcedLoad)
        void socket.sendAndAwaitOk('EVENT', this.announcement(), this.o.okTimeoutMs).catch(() => undefined)
      this.scheduleHeartbeat(gen)
    }, this.heartbeatIntervalMs())
  }

  /**
   * Ours, or faster when the relay's lease would not outlive two of ours lost (its NIP-11 says so), shortened
   * by up to HEARTBEAT_JITTER at random each time: agents that became ACTIVE together (a fleet started in
   * waves, every agent of a relay after its restart) would otherwise beat together for as long as they live,
   * a burst of signatures and verifications every interval. Only ever shorter, so the lease still holds.
   */
  private heartbeatIntervalMs(): number {
    const relayLeaseMs = (this.probe?.leaseSeconds ?? DEFAULT_LEASE_SECONDS) * 1000
    return Math.min(this.o.heartbeatMs, relayLeaseMs / 3) * (1 - HEARTBEAT_JITTER * this.o.random())
  }

  /**
   * SUSPECT after a heartbeat went unanswered (1.5 heartbeats of silence), ZOMBIE past the lease (the relay
   * has dropped us from discovery by then), and the socket is given up at the session timeout: a half-open
   * socket is found within it. Any frame from the relay makes the agent ACTIVE again.
   */
  private scheduleWatchdog(gen: number): void {
    const tickMs = Math.min(1000, this.o.heartbeatMs / 4)
    this.watchdogTimer = this.o.clock.setTimeout(() => {
      const socket = this.socket
      if (gen !== this.generation || !socket) return
      const now = this.o.clock.now()
      const silentMs = now - socket.lastInboundMs
      if (silentMs >= this.o.sessionMs) {
        // already ZOMBIE (past the lease): the INIT that follows says why, a second ZOMBIE would say nothing new
        this.schedule.degraded(now)
        this.stopTimers()
        this.socket = undefined
        this.generation++
        socket.terminate()
        return this.scheduleReconnect(
          `no frame from the relay for ${Math.round(silentMs / 1000)} s (session timeout): dropped the connection`,
          0,
        )
      }
      if (silentMs >= this.o.leaseMs && this.state !== 'ZOMBIE') {
        this.schedule.degraded(now)
        this.transition('ZOMBIE', `no frame from the relay for ${Math.round(silentMs / 1000)} s (past the lease)`)
      } else if (silentMs >= this.o.heartbeatMs * 1.5 && this.state === 'ACTIVE') {
        this.schedule.degraded(now)
        this.transition('SUSPECT', `a heartbeat went unanswered (${Math.round(silentMs / 1000)} s of silence)`)
      } else if (silentMs < this.o.heartbeatMs && (this.state === 'SUSPECT' || this.state === 'ZOMBIE')) {
        this.schedule.connected(now)
        this.transition('ACTIVE', 'the relay answered again')
        void this.publisher.flush()
      }
      this.scheduleWatchdog(gen)
    }, tickMs)
  }

  private async sayGoodbye(socket: RelaySocket): Promise<void> {
    const bye = signTemplate(this.o.key, heartbeatTemplate('offline'), this.nowSeconds())
    // the relay's OK is the ACK that it removed us from discovery; the same id re-sent is idempotent
    for (let i = 0; i < 4 && socket.isOpen; i++) {
      const answer = await socket.sendAndAwaitOk('EVENT', bye, this.o.goodbyeTimeoutMs).catch(() => undefined)
      if (answer !== undefined) return
    }
  }

  private stopTimers(): void {
    for (const t of [this.heartbeatTimer, this.watchdogTimer, this.challenge.timer]) if (t !== undefined) this.o.clock.clearTimeout(t)
    this.heartbeatTimer = undefined
    this.watchdogTimer = undefined
    this.challenge.timer = undefined
  }

  private clearResend(sub: AppSubscription): void {
    if (sub.resendTimer !== undefined) this.o.clock.clearTimeout(sub.resendTimer)
    sub.resendTimer = undefined
  }

  private clearReconnect(): void {
    if (this.reconnectTimer !== undefined) this.o.clock.clearTimeout(this.reconnectTimer)
    this.reconnectTimer = undefined
  }

  // --- inbound --------------------------------------------------------------------------------------------

  /**
   * A filter with a `since` and no `limit` asks for everything since then (every resumed one, and the
   * application's own when it says so): its stored part is tallied until EOSE, and paged if it came back full.
   */
  private sendReq(socket: RelaySocket, sub: AppSubscription): void {
    if (sub.refused !== undefined) return
    const filters = reqFiltersOf(sub, this.o.resumeOverlapSeconds)
    const paged = filters.filter(isPaged)
    sub.reqRun++
    sub.firstPage = paged.length > 0 ? paged.map(toTally) : undefined
    if (paged.length > 0) sub.backlogFromSeconds = Math.min(...paged.map((f) => f.since!))
    socket.send(['REQ', sub.subId, ...filters])
  }

  private onEvent(subId: string, event: NostrEvent): void {
    const query = this.queries.get(subId)
    if (query) {
      if (verifyEventWasm(event) === 'ok') query.events.push(event)
      return
    }
    const sub = this.subs.get(subId)
    if (!sub) return
    // the relay's page counts every stored event it sent, repeats and forgeries too
    if (sub.firstPage) tallyEvent(sub.firstPage, event)
    if (verifyEventWasm(event) === 'ok') this.deliver(sub, event)
  }

  /** a verified event of `sub`, live or from its backlog, to the application once */
  private deliver(sub: AppSubscription, event: NostrEvent): void {
    if (!this.isFirstDelivery(sub.subId, event) || !this.isWithinLimits(event)) return
    // an author's fast clock must not push the resume point into the future: that would open a gap
    sub.newestSeconds = Math.max(sub.newestSeconds ?? 0, Math.min(event.created_at, this.nowSeconds()))
    this.keepDedupFrom(sub)
    try {
      sub.onEvent(event)
    } catch {
      // the application's handler failing must not take the connection down with it
    }
  }

  /** the inbound guard: a guard that fails lets the event through (a duplicate beats a loss) */
  private isFirstDelivery(subId: string, event: NostrEvent): boolean {
    try {
      return this.dedup.admit(subId, event.id, event.created_at, this.o.clock.now())
    } catch {
      return true
    }
  }

  /** the dedup keeps what the next resume of `sub` can bring back, however long the outage */
  private keepDedupFrom(sub: AppSubscription): void {
    const since = resumeSinceOf(sub, this.o.resumeOverlapSeconds)
    if (since !== undefined) this.dedup.setFloor(sub.subId, since)
  }

  private isWithinLimits(event: NostrEvent): boolean {
    try {
      return this.limits?.admit(event, this.o.clock.now()) ?? true
    } catch {
      return true
    }
  }

  private onEose(subId: string): void {
    const query = this.queries.get(subId)
    if (query) {
      query.done()
      return
    }
    const sub = this.subs.get(subId)
    if (!sub) return
    if (sub.liveSinceSeconds === undefined) {
      sub.liveSinceSeconds = this.nowSeconds()
      this.keepDedupFrom(sub)
    }
    const tallies = sub.firstPage
    sub.firstPage = undefined
    // a backlog page that fails re-sends the REQ: its EOSE must not reset the backoff, the whole backlog does
    if (tallies) void this.fetchBacklog(sub, tallies)
    else sub.errorsInRow = 0
  }

  /**
   * Pages what the REQ's stored part left out (agent-backlog.ts). A failed page re-sends the whole REQ from
   * the held resume point, as after `CLOSED "error:"`; a lost connection's resume does the same by itself.
   */
  private async fetchBacklog(sub: AppSubscription, tallies: PageTally[]): Promise<void> {
    const socket = this.socket
    const gen = this.generation
    const run = sub.reqRun
    const isCurrent = () => gen === this.generation && run === sub.reqRun && sub.refused === undefined && this.subs.has(sub.subId)
    if (!socket) return
    const limits = { defaultLimit: this.probe?.defaultLimit, maxLimit: this.probe?.maxLimit }
    const budget = { pagesLeft: MAX_BACKLOG_PAGES }
    const deps = {
      query: (filters: WireFilter[]) => this.query(socket, filters),
      deliver: (e: NostrEvent) => this.deliver(sub, e),
      isCurrent,
    }
    try {
      for (const tally of tallies) {
        const outcome = await pageBacklog(tally, limits, budget, deps)
        if (outcome === 'stale') return
        // a backlog too large to page: the relay still holds the live subscription
        if (!outcome.ok) return this.refuse(sub, outcome.error, true)
      }
      if (!isCurrent()) return
      sub.backlogFromSeconds = undefined
      sub.errorsInRow = 0
      this.keepDedupFrom(sub)
    } catch (error) {
      if (isCurrent()) this.scheduleResend(sub, parseRetryAfterMs((error as Error).message))
    }
  }

  private onSubClosed(subId: string, reason: string): void {
    const query = this.queries.get(subId)
    if (query) {
      query.done(reason)
      return
    }
    const sub = this.subs.get(subId)
    if (!sub) return
    const prefix = prefixOf(reason)
    // `rate-limited:` and `error:` pass with time: re-sent on this connection after the delay; the rest is final
    if (prefix === 'rate-limited' || prefix === 'error') {
      this.scheduleResend(sub, prefix === 'rate-limited' ? parseRetryAfterMs(reason) : undefined)
      return
    }
    this.refuse(sub, reason)
  }

  /** ended for good: not re-sent, on this connection or the next, and the application is told once */
  private refuse(sub: AppSubscription, reason: string, closeAtRelay = false): void {
    sub.refused = reason
    sub.backlogFromSeconds = undefined
    this.clearResend(sub)
    if (closeAtRelay) this.socket?.send(['CLOSE', sub.subId])
    try {
      sub.onClosed?.(reason)
    } catch {
      // the application's handler failing must not take the connection down with it
    }
  }

  /** `retry in Ns` when the relay names it, else the reconnect backoff over the `error:`s in a row */
  private scheduleResend(sub: AppSubscription, retryAfterMs: number | undefined): void {
    this.clearResend(sub)
    const delayMs = retryAfterMs ?? spreadBackoffDelayMs(this.o.reconnect, sub.errorsInRow++, this.o.random())
    const gen = this.generation
    sub.resendTimer = this.o.clock.setTimeout(() => {
      sub.resendTimer = undefined
      const socket = this.socket
      // a new connection re-sends every subscription itself
      if (gen !== this.generation || !socket || !this.subs.has(sub.subId)) return
      this.sendReq(socket, sub)
    }, delayMs)
  }

  private query(socket: RelaySocket, filters: WireFilter[]): Promise<NostrEvent[]> {
    const subId = `agent-q${++this.subCounter}`
    return new Promise((resolve, reject) => {
      const events: NostrEvent[] = []
      const timer = this.o.clock.setTimeout(() => done(QUERY_TIMED_OUT), this.o.okTimeoutMs)
      const done = (closed?: string) => {
        this.o.clock.clearTimeout(timer)
        this.queries.delete(subId)
        // the relay keeps a subscription it did not end itself: a timed-out one must be CLOSEd too
        if (closed === undefined || closed === QUERY_TIMED_OUT) socket.send(['CLOSE', subId])
        if (closed !== undefined) return reject(new Error(`the relay refused the query: ${closed}`))
        resolve(events)
      }
      this.queries.set(subId, { events, done })
      if (!socket.send(['REQ', subId, ...filters])) done('error: the connection is gone')
    })
  }

  private transition(state: AgentState, cause: string, error?: AgentError): void {
    this.states.next(error ? { state, cause, error } : { state, cause })
  }

  private nowSeconds(): number {
    return Math.floor(this.o.clock.now() / 1000)
  }
}

/** What the relay closing the connection means: a ban (`blocked:`, community-cluster) is terminal, reconnecting would only be refused again; the rest backs off, honouring `rate-limited: retry in Ns`. */
function closeError(code: number, reason: string): AgentError | Transient {
  const why = `the relay closed the connection (${code}${reason ? ` ${reason}` : ''})`
  if (prefixOf(reason) === 'blocked') return new AgentError('blocked', `${why}: this key is banned here; ask the community's admins`)
  return new Transient(why, prefixOf(reason) === 'rate-limited' ? (parseRetryAfterMs(reason) ?? 0) : 0)
}

/** A refused AUTH or registration: `blocked:`/`restricted:`/`invalid:` are terminal; the rest back off. */
function refusal(what: string, answer: OkAnswer, invalidCode: 'auth-rejected' | 'restricted'): Error {
  const prefix = prefixOf(answer.message)
  const text = `the relay refused ${what}: ${answer.message || '(no reason)'}`
  if (prefix === 'blocked') return new AgentError('blocked', `${text}; this key is banned here`)
  if (prefix === 'restricted') return new AgentError('restricted', `${text}; ask the community's admins for access`)
  if (prefix === 'invalid') return new AgentError(invalidCode, `${text}; check the key, the relay URL and the clock`)
  return new Transient(text, prefix === 'rate-limited' ? (parseRetryAfterMs(answer.message) ?? 0) : 0)
}

export type { AgentClock, RandomSource } from './clock.js'
export { AgentError, type AgentErrorCode } from './error.js'
export type { InboundLimitOptions, WindowLimit } from './inbound-limits.js'
export type { AgentClientOptions, Capability } from './options.js'
export type { PublishResult } from './publisher.js'
export type { DiscoveredAgent } from './registry-wire.js'
export type { SubscribeOptions, WireFilter } from './subscriptions.js'
