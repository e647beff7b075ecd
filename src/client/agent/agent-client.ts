// The agent client (docs/agent-client.md): one agent's connection to the registry, kept alive by itself. It
// owns what outlives a connection: the state machine, the reconnect schedule, the outbound guard (publisher,
// offline queue), the inbound dedup, the application's subscriptions and watches, the jobs it serves and
// requests, the metrics. Each connect is a ConnectionAttempt (attempt.ts) that owns everything of that one
// connection and dies with it. Longer than ~250 lines because it is the public API and the state machine; the
// parts it drives are beside it.
import { BehaviorSubject, type Observable } from 'rxjs'
import type { NostrEvent } from '../../protocols/nip01/event.js'
import { type EventTemplate, signTemplate } from '../../protocols/nip01/sign.js'
import { type AgentState, type AgentStateChange, LIVE } from './agent-state.js'
import { Announcer } from './announcer.js'
import { type AttemptDeps, type AttemptHost, ConnectionAttempt } from './attempt.js'
import { DiscoveryRoundFailed, Transient } from './attempt-errors.js'
import { ReconnectSchedule } from './backoff.js'
import type { TimerHandle } from './clock.js'
import { AgentError } from './error.js'
import { InboundDedup } from './inbound-dedup.js'
import { InboundLimits } from './inbound-limits.js'
import { JobRequests } from './job-request.js'
import { JobServer } from './job-serve.js'
import type { JobCall, JobHandler, RequestOptions, ServeOptions } from './job-types.js'
import { type AgentClientOptions, type ResolvedOptions, resolveOptions } from './options.js'
import { type PublishCounters, Publisher, type PublishResult } from './publisher.js'
import { type DiscoveredAgent, KIND_ANNOUNCEMENT, KIND_PRESENCE, toDiscovered } from './registry-wire.js'
import { DEFAULT_LEASE_SECONDS, type RelayProbe } from './relay-info.js'
import { AppSubscriptions, type SubscribeOptions } from './subscriptions.js'
import { watchCapability } from './watch.js'
import type { WireFilter } from './wire-filter.js'

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

/** the prefix of a publish answered after a terminal error: who can fix what closed the agent */
const TERMINAL_PREFIX: Record<AgentError['code'], string> = {
  blocked: 'blocked',
  restricted: 'restricted',
  'auth-rejected': 'invalid',
  incompatible: 'error',
  'discovery-failed': 'error',
}

const STOPPED = 'error: the agent is stopped'

export class AgentClient {
  readonly pubkey: string
  readonly state$: Observable<AgentStateChange>
  private readonly o: ResolvedOptions
  private readonly states: BehaviorSubject<AgentStateChange>
  private readonly schedule: ReconnectSchedule
  private readonly publisher: Publisher
  private readonly dedup: InboundDedup
  private readonly limits: InboundLimits | undefined
  private readonly subscriptions: AppSubscriptions
  private readonly announcer: Announcer
  private readonly jobs: JobServer
  private readonly requests: JobRequests
  /** what every connection attempt shares with this client */
  private readonly shared: AttemptDeps
  private readonly watches = new Set<() => void>()
  /** the connection attempt in force, from discovery to the loss of its connection; a new one per connect */
  private attempt: ConnectionAttempt | undefined
  /** the last relay discovery chose: its lease outlasts the connection */
  private probe: RelayProbe | undefined
  /** the one timer that owns the reconnect schedule */
  private reconnectTimer: TimerHandle | undefined
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

  constructor(options: AgentClientOptions) {
    this.o = resolveOptions(options)
    this.pubkey = this.o.key.pubkey
    this.states = new BehaviorSubject<AgentStateChange>({ state: 'INIT', cause: 'created' })
    this.state$ = this.states.asObservable()
    this.schedule = new ReconnectSchedule(this.o.reconnect, this.o.reconnect.stableMs, this.o.random)
    this.dedup = new InboundDedup(this.o.dedup)
    this.limits = this.o.inboundLimits ? new InboundLimits(this.o.inboundLimits) : undefined
    this.publisher = new Publisher(this.o, () => (this.state === 'ACTIVE' ? this.attempt?.socket : undefined))
    const { clock, resumeOverlapSeconds } = this.o
    this.subscriptions = new AppSubscriptions({ clock, resumeOverlapSeconds, dedup: this.dedup, limits: this.limits })
    this.announcer = new Announcer(this.o)
    const newQueryId = () => `agent-q${++this.subCounter}`
    this.shared = { o: this.o, announcer: this.announcer, subscriptions: this.subscriptions, newQueryId }
    const publish = (t: EventTemplate) => this.publish(t)
    const subscribe = (filters: WireFilter[], onEvent: (e: NostrEvent) => void, options?: SubscribeOptions) =>
      this.subscribe(filters, onEvent, options)
    const relaySelf = () => this.probe?.self
    const reannounce = () => this.reannounce()
    this.jobs = new JobServer({ pubkey: this.pubkey, announcer: this.announcer, publish, subscribe, relaySelf, reannounce })
    const sign = (t: EventTemplate) => this.sign(t)
    const send = (e: NostrEvent) => this.send(e)
    const afterQueued = (id: string, then: (r: PublishResult) => void) => this.publisher.afterQueued(id, then)
    this.requests = new JobRequests({ clock: this.o.clock, sign, send, publish, subscribe, relaySelf, afterQueued })
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
    this.connect()
    return this.startPromise
  }

  /** Signs and sends; keeps the template's created_at. Never rejects. */
  async publish(t: EventTemplate): Promise<PublishResult> {
    let event: NostrEvent
    try {
      event = this.sign(t)
    } catch (error) {
      return { ok: false, id: '', reason: `invalid: cannot sign the template: ${(error as Error).message}` }
    }
    return this.send(event)
  }

  /**
   * NIP-01 filters; events reach `onEvent` once each, across reconnects. `options.onClosed` hears of a relay
   * refusing the subscription for good. Returns the unsubscribe.
   */
  subscribe(filters: WireFilter[], onEvent: (event: NostrEvent) => void, options: SubscribeOptions = {}): () => void {
    const sub = this.subscriptions.add(`agent-${++this.subCounter}`, filters, onEvent, options)
    // before ACTIVE the handshake sends every subscription once it is registered
    if (LIVE.has(this.state)) this.attempt?.open(sub)
    return () => {
      if (this.subscriptions.remove(sub.subId)) this.attempt?.unsubscribe(sub.subId)
    }
  }

  /** Live agents offering `capability`: announcements with a heartbeat within the relay's lease. */
  async discover(capability: string): Promise<DiscoveredAgent[]> {
    const attempt = this.attempt
    if (!attempt?.socket || !LIVE.has(this.state)) throw new Error(`discover() needs a connected agent (state ${this.state})`)
    const announcements = await attempt.query([{ kinds: [KIND_ANNOUNCEMENT], '#c': [capability] }])
    const authors = [...new Set(announcements.map((e) => e.pubkey))]
    const heartbeats: NostrEvent[] = []
    // one filter's list holds at most 1000 values on Apiary
    for (let i = 0; i < authors.length; i += 500)
      heartbeats.push(...(await attempt.query([{ kinds: [KIND_PRESENCE], authors: authors.slice(i, i + 500) }])))
    return toDiscovered(announcements, heartbeats, this.leaseSeconds(), this.o.clock.now())
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
      leaseSeconds: () => this.leaseSeconds(),
      clock: this.o.clock,
      tickMs: Math.min(1000, this.o.heartbeatMs),
    })
    this.watches.add(end)
    return () => {
      this.watches.delete(end)
      end()
    }
  }

  /**
   * Takes the relay's assignments of `capability` (docs/jobs.md): `handler(job, ctx)` resolves with the output
   * (a string, or anything JSON can encode); throwing RetryableJobError passes the job to another agent. At most
   * `options.concurrency` (1) at once. The capability is announced (with a `concurrency` tag). Returns the
   * function that stops serving it: assignments that come later are refused with `retry`.
   */
  serve(capability: string, handler: JobHandler, options: ServeOptions = {}): () => void {
    return this.jobs.serve(capability, handler, options)
  }

  /**
   * Asks the relay to dispatch a job to one live agent offering `capability`: a promise of `{ content, event,
   * agent }` that rejects with JobError, with the request's `id`, its streamed `chunks` and `cancel()`.
   */
  request(capability: string, input: string, options: RequestOptions = {}): JobCall {
    return this.requests.request(capability, input, options)
  }

  /** 0..1; re-announced with the next heartbeat when it changed (at most once per heartbeat). */
  setLoad(load: number): void {
    this.announcer.load = load
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
    this.jobs.abortAll('unavailable', 'the agent is stopping')
    this.requests.closeAll("the agent stopped before the job's answer arrived")
    this.clearReconnect()
    const attempt = this.attempt
    attempt?.quiet()
    this.endWatches()
    // publishes asleep in a throttle wait or a retry backoff settle now; those awaiting an OK get the bound
    this.publisher.close(STOPPED)
    if (attempt?.socket?.isOpen && LIVE.has(this.state)) {
      let timer: TimerHandle | undefined
      const bound = new Promise<void>((resolve) => {
        timer = this.o.clock.setTimeout(resolve, this.o.goodbyeTimeoutMs)
      })
      await Promise.race([this.publisher.settled(), bound])
      if (timer !== undefined) this.o.clock.clearTimeout(timer)
      await attempt.goodbye()
    }
    // the attempt closes with a closing handshake, not terminated as releaseAll() would
    this.attempt = undefined
    this.releaseAll(STOPPED)
    await attempt?.close(1000, 'goodbye')
    this.transition('CLOSED', 'stopped')
    this.starting?.reject(new Error('the agent was stopped before it became ACTIVE'))
    this.starting = undefined
  }

  // --- connection attempts ----------------------------------------------------------------------------------

  private connect(): void {
    this.reconnectTimer = undefined
    this.attempt = new ConnectionAttempt(this.shared, this.relayIndex, this.attemptHost())
  }

  /** The client's side of an attempt; the attempt drops it when it ends, so only the attempt in force reports. */
  private attemptHost(): AttemptHost {
    return {
      state: () => this.state,
      discovered: (probe, relayIndex) => {
        this.probe = probe
        this.relayIndex = relayIndex
        this.discoveryFailures = 0
        this.transition('DISCOVERED', `${probe.url} supports NIP-${probe.supportedNips.join(', ')}; lease ${probe.leaseSeconds} s`)
      },
      authenticated: () => this.transition('AUTHENTICATED', `NIP-42 as ${this.pubkey}`),
      registered: () => {
        this.schedule.connected(this.o.clock.now())
        this.everActive = true
        this.transition('ACTIVE', `registered ${this.o.capabilities.map((c) => c.name).join(', ') || 'no capabilities'}`)
        this.starting?.resolve()
        this.starting = undefined
        void this.publisher.flush()
      },
      degraded: (state, cause) => {
        this.schedule.degraded(this.o.clock.now())
        this.transition(state, cause)
      },
      recovered: () => {
        this.schedule.connected(this.o.clock.now())
        this.transition('ACTIVE', 'the relay answered again')
        void this.publisher.flush()
      },
      ended: (error) => this.onAttemptEnded(error),
    }
  }

  private onAttemptEnded(error: unknown): void {
    this.attempt = undefined
    if (error instanceof AgentError) this.closeWith(error)
    else if (error instanceof DiscoveryRoundFailed && !this.everActive && ++this.discoveryFailures >= this.o.maxDiscoveryRounds) {
      this.closeWith(
        new AgentError('discovery-failed', `${error.message}; gave up after ${this.discoveryFailures} rounds`, { cause: error }),
      )
    } else if (error instanceof Transient) this.scheduleReconnect(error.message, error.retryAfterMs)
    // a bug of ours must not end an agent that is meant to stay up: back off as for a network error
    else this.scheduleReconnect(`unexpected: ${(error as Error).message}`, 0)
  }

  private scheduleReconnect(why: string, retryAfterMs: number): void {
    if (this.stopping) return
    this.clearReconnect()
    const delayMs = Math.round(this.schedule.failed(this.o.clock.now(), retryAfterMs))
    this.reconnects++
    this.transition('INIT', `${why}; reconnecting in ${delayMs} ms`)
    this.reconnectTimer = this.o.clock.setTimeout(() => this.connect(), delayMs)
  }

  private closeWith(error: AgentError): void {
    const reason = `${TERMINAL_PREFIX[error.code]}: the agent is closed: ${error.message}`
    this.terminalReason = reason
    this.releaseAll(reason)
    this.transition('CLOSED', error.message, error)
    this.starting?.reject(error)
    this.starting = undefined
  }

  /**
   * Nothing of this agent may run after CLOSED: no attempt (with its heartbeat, watchdog, AUTH wait,
   * subscription re-sends), no reconnect or watch tick, and no publish may stay waiting or claim `queued`
   * (nothing will send it).
   */
  private releaseAll(reason: string): void {
    this.attempt?.dispose()
    this.attempt = undefined
    this.clearReconnect()
    this.endWatches()
    this.publisher.close(reason)
    this.jobs.abortAll('unavailable', reason)
    this.requests.closeAll(`the agent closed before the job's answer arrived (${reason})`)
  }

  private clearReconnect(): void {
    if (this.reconnectTimer !== undefined) this.o.clock.clearTimeout(this.reconnectTimer)
    this.reconnectTimer = undefined
  }

  private endWatches(): void {
    for (const end of this.watches) end()
    this.watches.clear()
  }

  private sign(t: EventTemplate): NostrEvent {
    return signTemplate(this.o.key, t, Math.floor(this.o.clock.now() / 1000))
  }

  private send(event: NostrEvent): Promise<PublishResult> {
    if (this.stopping || this.state === 'CLOSED') return Promise.resolve({ ok: false, id: event.id, reason: this.closedReason() })
    return this.publisher.publish(event)
  }

  /** a changed announcement goes out now when ACTIVE; otherwise the next handshake or heartbeat sends it */
  private reannounce(): void {
    if (this.state === 'ACTIVE' && this.announcer.isStale) void this.publisher.publish(this.announcer.announcement())
  }

  /** what a publish answers once the agent is CLOSED or stopping */
  private closedReason(): string {
    return this.terminalReason ?? STOPPED
  }

  private leaseSeconds(): number {
    return this.probe?.leaseSeconds ?? DEFAULT_LEASE_SECONDS
  }

  private transition(state: AgentState, cause: string, error?: AgentError): void {
    // the relay hands a lost connection's jobs to another agent: whatever this one still sends is refused
    if (state === 'INIT' || state === 'CLOSED') this.jobs.abortAll('unavailable', `the connection was lost: ${cause}`)
    this.states.next(error ? { state, cause, error } : { state, cause })
  }
}

export type { AgentState, AgentStateChange } from './agent-state.js'
export type { AgentClock, RandomSource } from './clock.js'
export { AgentError, type AgentErrorCode } from './error.js'
export type { InboundLimitOptions, WindowLimit } from './inbound-limits.js'
export { JobError, RetryableJobError } from './job-error.js'
export type { JobCall, JobChunk, JobContext, JobHandler, JobResult, RequestOptions, ServedJob, ServeOptions } from './job-types.js'
export type { AgentClientOptions, Capability } from './options.js'
export type { PublishResult } from './publisher.js'
export type { DiscoveredAgent } from './registry-wire.js'
export type { SubscribeOptions, WireFilter } from './subscriptions.js'
