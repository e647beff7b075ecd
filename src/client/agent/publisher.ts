// The outbound guard of one agent: throttles that wait (bounded), retries of sends that surely failed and of
// OK timeouts (an event id makes a re-send idempotent: the relay answers `duplicate:`), and the offline queue
// that takes whatever could not be sent while the agent was not ACTIVE.

import { spreadBackoffDelayMs } from '../../protocols/backoff.js'
import type { NostrEvent } from '../../protocols/nip01/event.js'
import { prefixOf } from '../../protocols/reasons.js'
import { parseRetryAfterMs } from './backoff.js'
import type { AgentClock, RandomSource, TimerHandle } from './clock.js'
import { OfflineQueue } from './offline-queue.js'
import type { ResolvedOptions } from './options.js'
import { type RelaySocket, SocketGone } from './relay-socket.js'
import { OutboundThrottle } from './throttle.js'

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
  /** set by close(): the reason every publish still waiting resolves with, and no longer queued */
  private closedReason: string | undefined
  private readonly inFlight = new Set<Promise<PublishResult>>()
  /** every wait under way (throttle, retry backoff, flush pace): close() ends them at once and clears their timers */
  private readonly naps = new Map<TimerHandle, () => void>()
  /**
   * Live publishes asleep in a throttle wait or a retry backoff, by seq. The flush does not send past one of
   * them: it wakes after a reconnect and must go out before what was published after it.
   */
  private readonly sleepers = new Map<number, Promise<void>>()
  private readonly releases = new Map<number, () => void>()
  /** by event id: who waits for the answer a queued publish gets once the queue sends it (afterQueued) */
  private readonly later = new Map<string, (r: PublishResult) => void>()

  constructor(
    private readonly o: ResolvedOptions,
    /** the socket to send on while the agent is ACTIVE, else undefined */
    private readonly liveSocket: () => RelaySocket | undefined,
  ) {
    this.queue = new OfflineQueue(o.offlineQueue, (item) =>
      this.answerLater(item.event.id, { ok: false, id: item.event.id, reason: 'error: dropped from the offline queue (full)' }),
    )
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
    if (this.closedReason !== undefined) return Promise.resolve({ ok: false, id: event.id, reason: this.closedReason })
    if (this.liveSocket() === undefined) return Promise.resolve(this.enqueue(event, seq, 'the agent is not ACTIVE'))
    if (this.queue.length > 0) {
      const queued = this.enqueue(event, seq, 'earlier publishes are still queued')
      void this.flush()
      return Promise.resolve(queued)
    }
    const sending = this.send(event, seq, this.o.maxWaitMs, true).catch((error: unknown) => {
      this.counters.failed++
      return { ok: false as const, id: event.id, reason: `error: ${(error as Error).message}` }
    })
    this.inFlight.add(sending)
    void sending.finally(() => this.inFlight.delete(sending))
    return sending
  }

  /**
   * `then` gets the answer the relay gives event `id`, published and answered `queued`, once the queue sent it
   * (or why it never will: dropped from the full queue, or the publisher closed). One waiter per event.
   */
  afterQueued(id: string, then: (r: PublishResult) => void): void {
    if (this.closedReason !== undefined) then({ ok: false, id, reason: this.closedReason })
    else this.later.set(id, then)
  }

  private answerLater(id: string, r: PublishResult): void {
    const then = this.later.get(id)
    if (then === undefined) return
    this.later.delete(id)
    then(r)
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
    while (this.closedReason === undefined && this.liveSocket() !== undefined) {
      const head = this.queue.peekSeq()
      if (head === undefined) return
      const earlier = [...this.sleepers.entries()].find(([seq]) => seq < head)
      if (earlier) {
        await earlier[1]
        continue
      }
      const item = this.queue.shift()!
      const startedMs = this.clock.now()
      // a bug of ours while sending one item costs that item, not the rest of the queue
      const r: PublishResult = await this.send(item.event, item.seq, Number.POSITIVE_INFINITY, false).catch((error: unknown) => {
        this.counters.failed++
        return { ok: false, id: item.event.id, reason: `error: ${(error as Error).message}` }
      })
      if (!r.ok && r.queued) return
      this.answerLater(item.event.id, r)
      const restMs = this.o.offlineQueue.flushIntervalMs - (this.clock.now() - startedMs)
      if (restMs > 0) await this.nap(restMs)
    }
  }

  /** `live`: a publish sent directly, not by the flush; after a wait it yields to a queue that formed meanwhile */
  private async send(event: NostrEvent, seq: number, maxWaitMs: number, live: boolean): Promise<PublishResult> {
    try {
      return await this.sendWithRetries(event, seq, maxWaitMs, live)
    } finally {
      this.release(seq)
    }
  }

  private async sendWithRetries(event: NostrEvent, seq: number, maxWaitMs: number, live: boolean): Promise<PublishResult> {
    const decision = this.throttle.reserve(event, this.clock.now(), maxWaitMs)
    if (!decision.ok) {
      this.counters.throttled++
      const retryAfterMs = decision.retryAfterMs
      return {
        ok: false,
        id: event.id,
        reason: `rate-limited: outbound throttle, retry in ${Math.ceil(retryAfterMs / 1000)}s`,
        throttled: true,
        retryAfterMs,
      }
    }
    let waited = await this.wait(decision.waitMs, live ? seq : undefined)
    for (let attempt = 0; ; attempt++) {
      if (this.closedReason !== undefined) return { ok: false, id: event.id, reason: this.closedReason }
      const socket = this.liveSocket()
      if (socket === undefined) return this.enqueue(event, seq, 'the connection was lost')
      // the socket dropped and came back while this one slept: a flush of later publishes may be under way
      if (waited && live && (this.queue.length > 0 || this.flushing !== undefined)) {
        const queued = this.enqueue(event, seq, 'the connection was lost while it waited')
        void this.flush()
        return queued
      }
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
          waited = await this.retryAfter(attempt, 0, live ? seq : undefined)
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
        waited = await this.retryAfter(attempt, retryAfterMs ?? 0, live ? seq : undefined)
        continue
      }
      this.counters.failed++
      // `restricted:`, `invalid:`, `blocked:` ... for one event are that publish's answer, not the agent's end
      return { ok: false, id: event.id, reason: answer.message, ...(retryAfterMs !== undefined && { throttled: true, retryAfterMs }) }
    }
  }

  private retryAfter(attempt: number, atLeastMs: number, sleeperSeq: number | undefined): Promise<boolean> {
    this.counters.retried++
    return this.wait(
      Math.max(
        atLeastMs,
        spreadBackoffDelayMs({ minMs: this.o.retry.minMs, maxMs: this.o.retry.maxMs, jitter: this.o.retry.jitter }, attempt, this.random()),
      ),
      sleeperSeq,
    )
  }

  /** true when it slept; a live publish (`sleeperSeq`) holds the flush back until it has sent or re-queued */
  private async wait(ms: number, sleeperSeq: number | undefined): Promise<boolean> {
    if (ms <= 0) return false
    this.counters.waitedSeconds += ms / 1000
    if (sleeperSeq !== undefined && !this.sleepers.has(sleeperSeq)) {
      let release = () => {}
      this.sleepers.set(sleeperSeq, new Promise<void>((resolve) => (release = resolve)))
      this.releases.set(sleeperSeq, release)
    }
    await this.nap(ms)
    return true
  }

  private release(seq: number): void {
    this.releases.get(seq)?.()
    this.releases.delete(seq)
    this.sleepers.delete(seq)
  }

  private nap(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = this.clock.setTimeout(() => {
        this.naps.delete(timer)
        resolve()
      }, ms)
      this.naps.set(timer, resolve)
    })
  }

  /**
   * The agent stopped or met a terminal error: nothing will send the queue again, so no answer may claim
   * `queued`; publishes asleep in a wait settle now with `reason`, and no timer of ours is left.
   */
  close(reason: string): void {
    this.closedReason ??= reason
    for (const id of [...this.later.keys()]) this.answerLater(id, { ok: false, id, reason: this.closedReason })
    for (const [timer, wake] of this.naps) {
      this.clock.clearTimeout(timer)
      wake()
    }
    this.naps.clear()
  }

  get isClosed(): boolean {
    return this.closedReason !== undefined
  }

  private enqueue(event: NostrEvent, seq: number, why: string): PublishResult {
    if (this.closedReason !== undefined) return { ok: false, id: event.id, reason: this.closedReason }
    this.queue.push(event, seq)
    this.counters.queued++
    return { ok: false, id: event.id, reason: `error: ${why}; queued for sending after the reconnect`, queued: true }
  }
}
