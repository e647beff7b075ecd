// The application's subscriptions, kept across connections: each remembers the newest created_at it
// delivered, so a reconnect re-sends its REQ from there minus an overlap, and the inbound dedup drops the
// overlap's repeats: no gap and no duplicate reach the application. What one connection sends and pages for
// them is open-subscriptions.ts.
import type { NostrEvent } from '../../protocols/nip01/event.js'
import type { AgentClock } from './clock.js'
import type { InboundDedup } from './inbound-dedup.js'
import type { InboundLimits } from './inbound-limits.js'
import type { WireFilter } from './wire-filter.js'

export type { WireFilter }

export interface AppSubscription {
  subId: string
  filters: WireFilter[]
  onEvent: (event: NostrEvent) => void
  /** the newest created_at delivered to the application */
  newestSeconds: number | undefined
  /** when the subscription was first live (client clock, unix seconds): the resume point before any event */
  liveSinceSeconds: number | undefined
  /** the relay refused it for good (`CLOSED` with a terminal prefix); not re-sent */
  refused?: string
  /** told once when the relay refuses it for good */
  onClosed?: (reason: string) => void
  /** `CLOSED "error:"` or failed backlog pages in a row (reset by an EOSE, or by the backlog paged whole): the re-send backs off */
  errorsInRow: number
  /**
   * the `since` of a REQ whose backlog is still being paged: the resume point stays there until the pager is
   * done, since the newest events arrive first and would otherwise move it past the older ones not yet fetched
   */
  backlogFromSeconds?: number
}

/** What a (re)sent REQ is computed from. */
export type ResumePoint = Pick<AppSubscription, 'filters' | 'newestSeconds' | 'liveSinceSeconds' | 'backlogFromSeconds'>

/** Optional per-subscription callbacks. */
export interface SubscribeOptions {
  /**
   * The relay refused the subscription for good (`CLOSED` with `restricted:`, `auth-required:`, `invalid:`,
   * `blocked:` or no known prefix): it is not re-sent, on this connection or the next.
   */
  onClosed?: (reason: string) => void
}

/**
 * The REQ filters for (re)sending. The first REQ is the application's filters as given; a resumed one starts
 * at the resume point minus the overlap, and drops `limit`, which would otherwise cut the gap to its newest
 * events. The relay still cuts it to its default limit: backlog.ts pages the rest.
 */
export function reqFiltersOf(sub: ResumePoint, overlapSeconds: number): WireFilter[] {
  const since = resumeSinceOf(sub, overlapSeconds)
  if (since === undefined) return sub.filters
  return sub.filters.map(({ limit: _limit, ...f }) => ({ ...f, since: Math.max(f.since ?? 0, since) }))
}

/** the `since` a resumed REQ asks from; undefined before the subscription was live */
export function resumeSinceOf(sub: ResumePoint, overlapSeconds: number): number | undefined {
  if (sub.backlogFromSeconds !== undefined) return sub.backlogFromSeconds
  const resumeAt = sub.newestSeconds ?? sub.liveSinceSeconds
  return resumeAt === undefined ? undefined : Math.max(0, resumeAt - overlapSeconds)
}

export interface AppSubscriptionsDeps {
  clock: AgentClock
  resumeOverlapSeconds: number
  dedup: InboundDedup
  limits: InboundLimits | undefined
}

export class AppSubscriptions {
  private readonly subs = new Map<string, AppSubscription>()

  constructor(private readonly deps: AppSubscriptionsDeps) {}

  add(subId: string, filters: WireFilter[], onEvent: (event: NostrEvent) => void, options: SubscribeOptions): AppSubscription {
    const sub: AppSubscription = {
      subId,
      filters: filters.map((f) => ({ ...f })),
      onEvent,
      onClosed: options.onClosed,
      newestSeconds: undefined,
      liveSinceSeconds: undefined,
      errorsInRow: 0,
    }
    this.subs.set(subId, sub)
    return sub
  }

  /** false when it was not (or no longer) subscribed */
  remove(subId: string): boolean {
    if (!this.subs.delete(subId)) return false
    this.deps.dedup.forget(subId)
    return true
  }

  get(subId: string): AppSubscription | undefined {
    return this.subs.get(subId)
  }

  has(subId: string): boolean {
    return this.subs.has(subId)
  }

  values(): IterableIterator<AppSubscription> {
    return this.subs.values()
  }

  /** a verified event of `sub`, live or from its backlog, to the application once */
  deliver(sub: AppSubscription, event: NostrEvent): void {
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

  /** the first EOSE: before any event, the subscription resumes from here */
  markLive(sub: AppSubscription): void {
    if (sub.liveSinceSeconds !== undefined) return
    sub.liveSinceSeconds = this.nowSeconds()
    this.keepDedupFrom(sub)
  }

  /** the REQ's stored part is all delivered, its backlog paged whole: the resume point may move again */
  markCaughtUp(sub: AppSubscription): void {
    sub.backlogFromSeconds = undefined
    sub.errorsInRow = 0
    this.keepDedupFrom(sub)
  }

  /** ended for good: not re-sent, on this connection or the next, and the application is told once */
  refuse(sub: AppSubscription, reason: string): void {
    sub.refused = reason
    sub.backlogFromSeconds = undefined
    try {
      sub.onClosed?.(reason)
    } catch {
      // the application's handler failing must not take the connection down with it
    }
  }

  /** the inbound guard: a guard that fails lets the event through (a duplicate beats a loss) */
  private isFirstDelivery(subId: string, event: NostrEvent): boolean {
    try {
      return this.deps.dedup.admit(subId, event.id, event.created_at, this.deps.clock.now())
    } catch {
      return true
    }
  }

  private isWithinLimits(event: NostrEvent): boolean {
    try {
      return this.deps.limits?.admit(event, this.deps.clock.now()) ?? true
    } catch {
      return true
    }
  }

  /** the dedup keeps what the next resume of `sub` can bring back, however long the outage */
  private keepDedupFrom(sub: AppSubscription): void {
    const since = resumeSinceOf(sub, this.deps.resumeOverlapSeconds)
    if (since !== undefined) this.deps.dedup.setFloor(sub.subId, since)
  }

  private nowSeconds(): number {
    return Math.floor(this.deps.clock.now() / 1000)
  }
}
