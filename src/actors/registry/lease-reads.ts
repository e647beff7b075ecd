// Reads of the presence store that serve the agent registry's rule (docs/agent-registry.md): a kind 31990
// announcement is served — REQ, COUNT, live — only while its author's presence lease is live. The presence
// store is the truth about leases, in a cluster too. These run beside the actors that call them (the
// community for its reads and live feed, the registry for its sweep), never inside a handler.
import type { PresenceStore } from '../../infra/gates/presence.js'
import type { StoredEvent } from '../../infra/store/event-store.js'
import { announcementFiltersOf, canMatchAnnouncements, KIND_ANNOUNCEMENT } from '../../protocols/agent-registry.js'
import type { Filter } from '../../protocols/nip01/filter.js'

/** Pubkeys read from the presence store per round trip (one MGET in Redis). */
const LEASE_BATCH = 500

/**
 * Beside the actor: the live leases among `pubkeys` (one read per LEASE_BATCH pubkeys). Between reads it
 * yields to the event loop: the in-memory store answers at once, so a sweep of thousands of leases would
 * otherwise hold the loop for one long turn, in the way of every handshake.
 */
export async function liveLeases(store: PresenceStore, community: string, pubkeys: readonly string[]): Promise<Set<string>> {
  const live = new Set<string>()
  for (let i = 0; i < pubkeys.length; i += LEASE_BATCH) {
    if (i > 0) await new Promise((resolve) => setImmediate(resolve))
    for (const p of (await store.get(community, pubkeys.slice(i, i + LEASE_BATCH))).keys()) live.add(p)
  }
  return live
}

/** Beside the actor: a page without the announcements whose author holds no lease now. */
export async function dropLapsed(stored: StoredEvent[], store: PresenceStore, community: string): Promise<StoredEvent[]> {
  // `kind` is the row's: only announcements are parsed (a page's events are parsed lazily, if ever)
  const authors = [...new Set(stored.filter((s) => s.kind === KIND_ANNOUNCEMENT).map((s) => s.event.pubkey))]
  if (authors.length === 0) return stored
  const live = await liveLeases(store, community, authors)
  return stored.filter((s) => s.kind !== KIND_ANNOUNCEMENT || live.has(s.event.pubkey))
}

type Read = (filters: Filter[]) => Promise<StoredEvent[]>

/**
 * Beside the actor: a REQ's page served lease-aware. Lapsed announcements must not take a place in a filter's
 * `limit` (a `discover` behind many dead agents would get an empty page): the common case is one query, as
 * before; only when the page lost announcements are the filters that can match 31990 read again one by one,
 * each over-fetching (×8 a round) until its page is full, the store has no more, or `scanMaxEvents` rows
 * were read (a bound on one REQ's cost). Newest first, ties by lowest id (NIP-01), one copy per event.
 */
export async function readLeaseAware(
  filters: Filter[],
  read: Read,
  store: PresenceStore,
  community: string,
  scanMaxEvents: number,
): Promise<StoredEvent[]> {
  const page = await read(filters)
  const kept = await dropLapsed(page, store, community)
  if (kept.length === page.length) return kept
  const others = filters.filter((f) => !canMatch(f))
  const parts = await Promise.all([
    others.length > 0 ? read(others) : Promise.resolve([]),
    ...filters.filter(canMatch).map((f) => fillPage(f, read, store, community, scanMaxEvents)),
  ])
  const byId = new Map<string, StoredEvent>()
  for (const part of parts) for (const s of part) byId.set(s.id, s)
  return [...byId.values()].sort((a, b) => b.event.created_at - a.event.created_at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
}

const canMatch = (f: Filter) => canMatchAnnouncements([f])
const OVERFETCH_FACTOR = 8

/** One filter's page of at most its `limit` (set by the caller) events, lapsed announcements not counted. */
async function fillPage(f: Filter, read: Read, store: PresenceStore, community: string, scanMaxEvents: number): Promise<StoredEvent[]> {
  const limit = f.limit ?? scanMaxEvents
  for (let scan = limit; ; scan = Math.min(scan * OVERFETCH_FACTOR, scanMaxEvents)) {
    const page = await read([{ ...f, limit: scan }])
    const kept = await dropLapsed(page, store, community)
    if (kept.length >= limit || page.length < scan || scan >= scanMaxEvents) return kept.slice(0, limit)
  }
}

/**
 * Beside the actor: how many of a COUNT's announcements must not be counted (their author holds no lease).
 * A filter without a `limit` counts everything: its announcements are read up to `scanMaxEvents`, the same
 * bound as a REQ's over-fetch, so the answer is exact while no more stored announcements than that match. With
 * a `limit`, the announcements are those of the narrowed filter's page, which can differ from those in the
 * original filter's page (documented in docs/agent-registry.md).
 */
export async function lapsedAnnouncements(
  filters: Filter[],
  read: Read,
  store: PresenceStore,
  community: string,
  scanMaxEvents: number,
): Promise<number> {
  const narrowed = announcementFiltersOf(filters).map((f) => ({ ...f, limit: Math.min(f.limit ?? scanMaxEvents, scanMaxEvents) }))
  const announcements = await read(narrowed)
  if (announcements.length === 0) return 0
  return announcements.length - (await dropLapsed(announcements, store, community)).length
}
