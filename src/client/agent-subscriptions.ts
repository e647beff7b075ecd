// The application's subscriptions, kept across connections: each remembers the newest created_at it
// delivered, so a reconnect re-sends its REQ from there minus an overlap, and the inbound dedup drops the
// overlap's repeats: no gap and no duplicate reach the application.
import type { NostrEvent } from '../protocols/nip01/event.js'

/** A NIP-01 filter in its wire form (`#h`, `#p` ... as sent). */
export type WireFilter = Record<string, unknown> & { since?: number; limit?: number }

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
}

/**
 * The REQ filters for (re)sending. The first REQ is the application's filters as given; a resumed one starts
 * at the resume point minus the overlap, and drops `limit`, which would otherwise cut the gap to its newest
 * events.
 */
export function reqFiltersOf(sub: AppSubscription, overlapSeconds: number): WireFilter[] {
  const resumeAt = sub.newestSeconds ?? sub.liveSinceSeconds
  if (resumeAt === undefined) return sub.filters
  const since = Math.max(0, resumeAt - overlapSeconds)
  return sub.filters.map(({ limit: _limit, ...f }) => ({ ...f, since: Math.max(f.since ?? 0, since) }))
}
