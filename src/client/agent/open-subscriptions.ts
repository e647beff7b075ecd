// The application's subscriptions as sent on one connection: the REQ in force for each, its stored part
// tallied until EOSE and its backlog paged (backlog.ts), and the re-sends after a `CLOSED` that passes with
// time. One connection attempt owns it: end() stops every pager and re-send with that connection.

import { spreadBackoffDelayMs } from '../../protocols/backoff.js'
import { type NostrEvent, verifyEventWasm } from '../../protocols/nip01/event.js'
import { prefixOf } from '../../protocols/reasons.js'
import { isPaged, MAX_BACKLOG_PAGES, type PageTally, pageBacklog, type QueryLimits, tallyEvent, toTally } from './backlog.js'
import { parseRetryAfterMs } from './backoff.js'
import type { TimerHandle } from './clock.js'
import type { ResolvedOptions } from './options.js'
import type { RelaySocket } from './relay-socket.js'
import { type AppSubscription, type AppSubscriptions, reqFiltersOf } from './subscriptions.js'
import type { WireFilter } from './wire-filter.js'

/** One REQ sent for a subscription: replaced by its next REQ, ended by a CLOSE or with the connection. */
interface SentReq {
  sub: AppSubscription
  /** the sent filters that may need paging, with what their stored part brought; until the REQ's EOSE */
  firstPage: PageTally[] | undefined
  /** false once replaced or ended: its backlog pager stops */
  current: boolean
}

export interface OpenSubscriptionsDeps {
  o: ResolvedOptions
  subscriptions: AppSubscriptions
  /** the relay's NIP-11 limits, for paging */
  limits: QueryLimits
  /** a one-shot REQ on the same connection (one-shot-queries.ts) */
  query(filters: WireFilter[]): Promise<NostrEvent[]>
}

export class OpenSubscriptions {
  private readonly reqs = new Map<string, SentReq>()
  private readonly resendTimers = new Map<string, TimerHandle>()

  constructor(
    private readonly socket: RelaySocket,
    private readonly deps: OpenSubscriptionsDeps,
  ) {}

  /**
   * A filter with a `since` and no `limit` asks for everything since then (every resumed one, and the
   * application's own when it says so): its stored part is tallied until EOSE, and paged if it came back full.
   */
  send(sub: AppSubscription): void {
    if (sub.refused !== undefined) return
    const filters = reqFiltersOf(sub, this.deps.o.resumeOverlapSeconds)
    const paged = filters.filter(isPaged)
    this.retire(sub.subId)
    this.reqs.set(sub.subId, { sub, firstPage: paged.length > 0 ? paged.map(toTally) : undefined, current: true })
    if (paged.length > 0) sub.backlogFromSeconds = Math.min(...paged.map((f) => f.since!))
    this.socket.send(['REQ', sub.subId, ...filters])
  }

  /** the application unsubscribed */
  close(subId: string): void {
    this.retire(subId)
    this.socket.send(['CLOSE', subId])
  }

  onEvent(subId: string, event: NostrEvent): void {
    const sub = this.deps.subscriptions.get(subId)
    if (!sub) return
    // the relay's page counts every stored event it sent, repeats and forgeries too
    const firstPage = this.reqs.get(subId)?.firstPage
    if (firstPage) tallyEvent(firstPage, event)
    if (verifyEventWasm(event) === 'ok') this.deps.subscriptions.deliver(sub, event)
  }

  onEose(subId: string): void {
    const sub = this.deps.subscriptions.get(subId)
    if (!sub) return
    this.deps.subscriptions.markLive(sub)
    const req = this.reqs.get(subId)
    const tallies = req?.firstPage
    if (req) req.firstPage = undefined
    // a backlog page that fails re-sends the REQ: its EOSE must not reset the backoff, the whole backlog does
    if (req && tallies) void this.fetchBacklog(req, tallies)
    else sub.errorsInRow = 0
  }

  onClosed(subId: string, reason: string): void {
    const sub = this.deps.subscriptions.get(subId)
    if (!sub) return
    const prefix = prefixOf(reason)
    // `rate-limited:` and `error:` pass with time: re-sent on this connection after the delay; the rest is final
    if (prefix === 'rate-limited' || prefix === 'error') {
      this.scheduleResend(sub, prefix === 'rate-limited' ? parseRetryAfterMs(reason) : undefined)
      return
    }
    this.refuse(sub, reason)
  }

  /** the connection ended: no pager goes on and no re-send is left */
  end(): void {
    for (const subId of [...this.reqs.keys(), ...this.resendTimers.keys()]) this.retire(subId)
  }

  /**
   * Pages what the REQ's stored part left out (backlog.ts). A failed page re-sends the whole REQ from the held
   * resume point, as after `CLOSED "error:"`; a lost connection's resume does the same by itself.
   */
  private async fetchBacklog(req: SentReq, tallies: PageTally[]): Promise<void> {
    const { sub } = req
    const isCurrent = () => req.current && sub.refused === undefined && this.deps.subscriptions.has(sub.subId)
    const budget = { pagesLeft: MAX_BACKLOG_PAGES }
    const deps = { query: this.deps.query, deliver: (e: NostrEvent) => this.deps.subscriptions.deliver(sub, e), isCurrent }
    try {
      for (const tally of tallies) {
        const outcome = await pageBacklog(tally, this.deps.limits, budget, deps)
        if (outcome === 'stale') return
        // a backlog too large to page: the relay still holds the live subscription
        if (!outcome.ok) return this.refuse(sub, outcome.error, true)
      }
      if (isCurrent()) this.deps.subscriptions.markCaughtUp(sub)
    } catch (error) {
      if (isCurrent()) this.scheduleResend(sub, parseRetryAfterMs((error as Error).message))
    }
  }

  private refuse(sub: AppSubscription, reason: string, closeAtRelay = false): void {
    this.clearResend(sub.subId)
    if (closeAtRelay) this.socket.send(['CLOSE', sub.subId])
    this.deps.subscriptions.refuse(sub, reason)
  }

  /** `retry in Ns` when the relay names it, else the reconnect backoff over the `error:`s in a row */
  private scheduleResend(sub: AppSubscription, retryAfterMs: number | undefined): void {
    this.clearResend(sub.subId)
    const { o } = this.deps
    const delayMs = retryAfterMs ?? spreadBackoffDelayMs(o.reconnect, sub.errorsInRow++, o.random())
    const timer = o.clock.setTimeout(() => {
      this.resendTimers.delete(sub.subId)
      if (this.deps.subscriptions.has(sub.subId)) this.send(sub)
    }, delayMs)
    this.resendTimers.set(sub.subId, timer)
  }

  /** the REQ of `subId` is no longer in force here: its pager stops, its re-send is cancelled */
  private retire(subId: string): void {
    const req = this.reqs.get(subId)
    if (req) req.current = false
    this.reqs.delete(subId)
    this.clearResend(subId)
  }

  private clearResend(subId: string): void {
    const timer = this.resendTimers.get(subId)
    if (timer !== undefined) this.deps.o.clock.clearTimeout(timer)
    this.resendTimers.delete(subId)
  }
}
