// Paging a subscription's stored backlog. A relay answers a filter without `limit` with at most its
// `default_limit` newest events (NIP-11 `limitation`; 100 on Apiary), so a resume after a busy outage would
// lose the older ones: when the REQ's stored part comes back full, older pages are fetched with one-shot REQs
// (`until` = the oldest created_at so far, `limit` = `max_limit`) until one is not full.
//
// NIP-01: `until` is inclusive, so each page re-fetches its boundary second; the inbound dedup drops those
// repeats, and no event sharing that second with the boundary is lost.
import type { NostrEvent } from '../../protocols/nip01/event.js'
import { type Filter, matchFilter } from '../../protocols/nip01/filter.js'
import { err, OK_VOID, type Result } from '../../protocols/result.js'
import type { WireFilter } from './wire-filter.js'

/** pages fetched per resume at most (100 × Apiary's max_limit 500 = 50,000 events); past it the backlog is reported too large */
export const MAX_BACKLOG_PAGES = 100

/** the `limit` of a backlog page when the relay advertises no `max_limit`: Apiary's and strfry's default */
const UNADVERTISED_MAX_LIMIT = 500

export interface QueryLimits {
  defaultLimit?: number
  maxLimit?: number
}

/** One sent filter's share of the stored events before EOSE. */
export interface PageTally {
  filter: WireFilter
  match: Filter
  count: number
  oldestSeconds: number | undefined
}

export interface BacklogDeps {
  /** a one-shot REQ, CLOSEd at its EOSE; rejects when the relay refuses it or the connection goes */
  query(filters: WireFilter[]): Promise<NostrEvent[]>
  deliver(event: NostrEvent): void
  /** false once the REQ this backlog belongs to was replaced, ended or its connection lost */
  isCurrent(): boolean
}

/** A filter whose stored answer the relay cuts to its default limit, and which asks from a point in time. */
export const isPaged = (f: WireFilter): boolean => f.since !== undefined && f.limit === undefined

export const toTally = (filter: WireFilter): PageTally => ({ filter, match: toFilter(filter), count: 0, oldestSeconds: undefined })

/** counts a stored event toward every sent filter it matches (a REQ's filters share one EOSE) */
export function tallyEvent(tallies: readonly PageTally[], event: NostrEvent): void {
  for (const t of tallies) {
    if (!matchFilter(t.match, event)) continue
    t.count++
    t.oldestSeconds = Math.min(t.oldestSeconds ?? event.created_at, event.created_at)
  }
}

/**
 * Fetches what the first page of `tally` left out, older pages first to last. `budget.pagesLeft` is shared
 * by the filters of one resume. 'stale' when the REQ was replaced meanwhile (its successor pages again).
 */
export async function pageBacklog(
  tally: PageTally,
  limits: QueryLimits,
  budget: { pagesLeft: number },
  deps: BacklogDeps,
): Promise<Result<void, string> | 'stale'> {
  const firstLimit =
    limits.defaultLimit === undefined ? undefined : Math.min(limits.defaultLimit, limits.maxLimit ?? Number.POSITIVE_INFINITY)
  let full = isFull(tally.count, firstLimit)
  let untilSeconds = tally.oldestSeconds
  const { limit: _limit, ...base } = tally.filter
  const pageLimit = limits.maxLimit ?? UNADVERTISED_MAX_LIMIT
  while (full && untilSeconds !== undefined) {
    if (budget.pagesLeft <= 0)
      return err(
        `error: the backlog since ${base.since} is larger than ${MAX_BACKLOG_PAGES} pages of ${pageLimit}; events up to ${untilSeconds} were not fetched; subscribe again from a later since`,
      )
    budget.pagesLeft--
    const events = await deps.query([{ ...base, until: untilSeconds, limit: pageLimit }])
    if (!deps.isCurrent()) return 'stale'
    for (const e of events) deps.deliver(e)
    const oldest = events.reduce((m, e) => Math.min(m, e.created_at), untilSeconds)
    full = isFull(events.length, limits.maxLimit)
    // a full page within the boundary second: `until` cannot get past it (NIP-01 pages by second only)
    if (full && oldest >= untilSeconds && limits.maxLimit !== undefined)
      return err(`error: more than ${pageLimit} matching events at created_at ${untilSeconds}; paging by until cannot fetch them all`)
    if (oldest >= untilSeconds) return OK_VOID
    untilSeconds = oldest
  }
  return OK_VOID
}

/** an unknown limit counts any event as a full page: one more page is cheaper than a gap */
const isFull = (count: number, limit: number | undefined): boolean => (limit === undefined ? count > 0 : count >= limit)

/** the wire form (`#h: [...]`) to the matcher's (`tags.h`) */
function toFilter(w: WireFilter): Filter {
  const f: Filter = {}
  const tags: Record<string, string[]> = {}
  for (const [key, value] of Object.entries(w)) {
    if (key.length === 2 && key[0] === '#' && Array.isArray(value)) tags[key[1]!] = value as string[]
  }
  if (Array.isArray(w.ids)) f.ids = w.ids as string[]
  if (Array.isArray(w.authors)) f.authors = w.authors as string[]
  if (Array.isArray(w.kinds)) f.kinds = w.kinds as number[]
  if (typeof w.since === 'number') f.since = w.since
  if (typeof w.until === 'number') f.until = w.until
  if (Object.keys(tags).length > 0) f.tags = tags
  return f
}
