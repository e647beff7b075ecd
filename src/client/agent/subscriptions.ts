// The application's subscriptions, kept across connections: each remembers the newest created_at it
// delivered, so a reconnect re-sends its REQ from there minus an overlap, and the inbound dedup drops the
// overlap's repeats: no gap and no duplicate reach the application.
import type { NostrEvent } from '../../protocols/nip01/event.js'
import type { PageTally } from './backlog.js'
import type { TimerHandle } from './clock.js'
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
  /** a re-send after `CLOSED "rate-limited:"`/`"error:"` on a connection that stays up */
  resendTimer?: TimerHandle
  /** `CLOSED "error:"` or failed backlog pages in a row (reset by an EOSE, or by the backlog paged whole): the re-send backs off */
  errorsInRow: number
  /** bumped by every REQ sent: the backlog pager of a replaced REQ stops */
  reqRun: number
  /** the sent filters that may need paging, with what their stored part brought; until the REQ's EOSE */
  firstPage?: PageTally[]
  /**
   * the `since` of a REQ whose backlog is still being paged: the resume point stays there until the pager is
   * done, since the newest events arrive first and would otherwise move it past the older ones not yet fetched
   */
  backlogFromSeconds?: number
}

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
 * events. The relay still cuts it to its default limit: agent-backlog.ts pages the rest.
 */
export function reqFiltersOf(sub: AppSubscription, overlapSeconds: number): WireFilter[] {
  const since = resumeSinceOf(sub, overlapSeconds)
  if (since === undefined) return sub.filters
  return sub.filters.map(({ limit: _limit, ...f }) => ({ ...f, since: Math.max(f.since ?? 0, since) }))
}

/** the `since` a resumed REQ asks from; undefined before the subscription was live */
export function resumeSinceOf(sub: AppSubscription, overlapSeconds: number): number | undefined {
  if (sub.backlogFromSeconds !== undefined) return sub.backlogFromSeconds
  const resumeAt = sub.newestSeconds ?? sub.liveSinceSeconds
  return resumeAt === undefined ? undefined : Math.max(0, resumeAt - overlapSeconds)
}
