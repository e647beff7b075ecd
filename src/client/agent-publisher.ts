// The outbound guard of one agent: throttles that wait (bounded), retries of sends that surely failed and of
// OK timeouts (an event id makes a re-send idempotent: the relay answers `duplicate:`), and the offline queue
// that takes whatever could not be sent while the agent was not ACTIVE.
import type { NostrEvent } from '../protocols/nip01/event.js'
import { prefixOf } from '../protocols/reasons.js'
import { backoffDelayMs, parseRetryAfterMs } from './agent-backoff.js'
import { type AgentClock, type RandomSource, sleep } from './agent-clock.js'
import { OfflineQueue } from './agent-offline-queue.js'
import type { ResolvedOptions } from './agent-options.js'
import { type RelaySocket, SocketGone } from './agent-relay-socket.js'
import { OutboundThrottle } from './agent-throttle.js'

export type PublishResult =
  | { ok: true; id: string; duplicate: boolean }
  | { ok: false; id: string; reason: string; throttled?: boolean; queued?: boolean; retryAfterMs?: number }

export interface PublishCounters {
  sent: number
  failed: number
  throttled: number
  retried: number
  queued: number
  waitedSeconds: number
}

export class Publisher {
  readonly counters: PublishCounters = { sent: 0, failed: 0, throttled: 0, retried: 0, queued: 0, waitedSeconds: 0 }
  readonly queue: OfflineQueue
  private readonly throttle: OutboundThrottle
  private readonly clock: AgentClock
  private readonly random: RandomSource
  private nextSeq = 0
  private flushing: Promise<void> | undefined
  private closed = false
  private readonly inFlight = new Set<Promise<PublishResult>>()

  constructor(
    private readonly o: ResolvedOptions,
    /** the socket to send on while the agent is ACTIVE, else undefined */
    private readonly liveSocket: () => RelaySocket | undefined,
  ) {
    this.queue = new OfflineQueue(o.offlineQueue)
    this.throttle = new OutboundThrottle(o.throttle)
    this.clock = o.clock
    this.random = o.random
  }

  /**
   * While a queue is waiting, a new publish joins its end even when ACTIVE: the queue is flushed in publish
   * order, and a live publish overtaking it would break that order.
   */
  publish(event: NostrEvent): Promise<PublishResult> {
    const seq = this.nextSeq++
    if (this.liveSocket() === undefined) return Promise.resolve(this.enqueue(event, seq, 'the agent is not ACTIVE'))
    if (this.queue.length > 0) {
      const queued = this.enqueue(event, seq, 'earlier publishes are still queued')
      void this.flush()
      return Promise.resolve(queued)
    }
    const sending = this.send(event, seq, this.o.maxWaitMs)
    this.inFlight.add(sending)
    void sending.finally(() => this.inFlight.delete(sending))
    return sending
  }

  /** resolves once every publish in flight now has its answer and a flush under way has emptied the queue */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.inFlight, ...(this.flushing ? [this.flushing] : [])])
  }

  /** Sends the queue in order, one per flushIntervalMs at most; stops (the rest stays queued) on a drop. */
  flush(): Promise<void> {
    this.flushing ??= this.drain().finally(() => {
      this.flushing = undefined
    })
    return this.flushing
  }

  private async drain(): Promise<void> {
    while (this.liveSocket() !== undefined) {
      const item = this.queue.shift()
      if (!item) return
      const startedMs = this.clock.now()
      const r = await this.send(item.event, item.seq, Number.POSITIVE_INFINITY)
      if (!r.ok && r.queued) return
      const restMs = this.o.offlineQueue.flushIntervalMs - (this.clock.now() - startedMs)
      if (restMs > 0) await sleep(this.clock, restMs)
    }
  }


  private async send(event: NostrEvent, seq: number, maxWaitMs: number): Promise<PublishResult> {
    const decision = this.throttle.reserve(event.tags, this.clock.now(), maxWaitMs)
    if (!decision.ok) {
      this.counters.throttled++
      const retryAfterMs = decision.retryAfterMs
      return { ok: false, id: event.id, reason: `rate-limited: outbound throttle, retry in ${Math.ceil(retryAfterMs / 1000)}s`, throttled: true, retryAfterMs }
    }
    await this.wait(decision.waitMs)
    for (let attempt = 0; ; attempt++) {
      const socket = this.liveSocket()
      if (socket === undefined) return this.enqueue(event, seq, 'the connection was lost')
      let answer: Awaited<ReturnType<RelaySocket['sendAndAwaitOk']>>
      try {
        answer = await socket.sendAndAwaitOk('EVENT', event, this.o.okTimeoutMs)
      } catch (error) {
        if (error instanceof SocketGone) return this.enqueue(event, seq, error.message)
        throw error
      }
      const canRetry = attempt + 1 < this.o.retry.maxAttempts
      if (answer === undefined) {
        if (canRetry) {
          await this.retryAfter(attempt, 0)
          continue
        }
        this.counters.failed++
        return { ok: false, id: event.id, reason: `error: no OK from the relay within ${this.o.okTimeoutMs} ms` }
      }
      if (answer.accepted) {
        this.counters.sent++
        return { ok: true, id: event.id, duplicate: prefixOf(answer.message) === 'duplicate' }
      }
      const prefix = prefixOf(answer.message)
      const retryAfterMs = prefix === 'rate-limited' ? parseRetryAfterMs(answer.message) : undefined
      // `error:` is the relay's fault and `rate-limited:` passes with time: both are worth another try
      if ((prefix === 'error' || prefix === 'rate-limited') && canRetry && (retryAfterMs ?? 0) <= maxWaitMs) {
        await this.retryAfter(attempt, retryAfterMs ?? 0)
        continue
      }
      this.counters.failed++
      // `restricted:`, `invalid:`, `blocked:` ... for one event are that publish's answer, not the agent's end
      return { ok: false, id: event.id, reason: answer.message, ...(retryAfterMs !== undefined && { throttled: true, retryAfterMs }) }
    }
  }

  private async retryAfter(attempt: number, atLeastMs: number): Promise<void> {
    this.counters.retried++
    await this.wait(Math.max(atLeastMs, backoffDelayMs({ minMs: this.o.retry.minMs, maxMs: this.o.retry.maxMs, jitter: this.o.retry.jitter }, attempt, this.random)))
  }

  private async wait(ms: number): Promise<void> {
    if (ms <= 0) return
    this.counters.waitedSeconds += ms / 1000
    await sleep(this.clock, ms)
  }

  /** the agent stopped: nothing will send the queue again, so no answer may claim `queued` */
  close(): void {
    this.closed = true
  }

  private enqueue(event: NostrEvent, seq: number, why: string): PublishResult {
    if (this.closed) return { ok: false, id: event.id, reason: `error: ${why} and the agent stopped` }
    this.queue.push(event, seq)
    this.counters.queued++
    return { ok: false, id: event.id, reason: `error: ${why}; queued for sending after the reconnect`, queued: true }
  }
}
