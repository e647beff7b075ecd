import type { OutboundQueue } from '../../infra/ws/outbound-queue.js'
import type { NostrEvent } from '../../protocols/nip01/event.js'
import { type Filter, matchFilter } from '../../protocols/nip01/filter.js'
import type { Reason } from '../../protocols/reasons.js'

/** What a community needs to know of a connection to deliver to it (owned and mutated by the connection). */
export interface ConnView {
  readonly id: string
  /** the client's address (client-ip.ts: canonical, behind a trusted proxy the one it reports): blockip closes by it */
  readonly ip: string
  readonly queue: OutboundQueue
  readonly authed: ReadonlySet<string>
  /** agents authenticated here with an owner attestation (docs/agent-attestation.md): agent → its owner's pubkey */
  readonly owners: ReadonlyMap<string, string>
  /**
   * The subscription ids the connection holds open: the truth the index only caches. Delivery checks it, so a
   * CLOSE whose Unsubscribe never reached the community (a full mailbox, a restart) still stops delivery.
   */
  readonly subs: ReadonlySet<string>
  /** the community can no longer deliver to `subId` without a gap: the connection closes it with `why` (CLOSED) */
  lose(subId: string, why: Reason): void
  /** a read of this connection was stopped over its budget after examining this many rows: its principal pays */
  chargeRead?(rowsExamined: number): void
}

/** Every connection of the community, subscribed or not (a ban must reach sockets that only publish). */
export type ConnectionRegistry = Map<string, ConnView>

export interface Subscription {
  conn: ConnView
  subId: string
  filters: Filter[]
  /**
   * Set while the stored page is being read (community-reads.ts): live events decided meanwhile wait here and
   * follow the EOSE, so none falls between the page and the live feed. Bounded in bytes by the caller.
   */
  held?: { events: { id: string; raw: string }[]; bytes: number }
  /** ids the page already sent, for a short while after it: their live copy, still on its way, is not sent twice */
  sent?: { ids: Set<string>; untilMs: number }
}

interface Entry {
  sub: Subscription
  filter: Filter
}

/**
 * Maps an event to the subscriptions it matches without scanning every filter (docs/architecture.md §6.6). Each filter is
 * filed under one key — its most selective field (ids, then authors, then one tag, then kinds) — and an
 * event looks up only the keys it carries; candidates are then checked with the reference matcher.
 */
export class SubscriptionIndex {
  private readonly byKey = new Map<string, Set<Entry>>()
  private readonly wildcard = new Set<Entry>()
  private readonly subs = new Map<string, Map<string, { sub: Subscription; entries: [string | null, Entry][] }>>()

  // kept, not summed: the community reads it after every message it handles
  private count = 0

  get size(): number {
    return this.count
  }

  get connections(): number {
    return this.subs.size
  }

  /** every subscription here */
  *all(): Iterable<Subscription> {
    for (const perConn of this.subs.values()) for (const { sub } of perConn.values()) yield sub
  }

  /** every connection with at least one subscription here */
  *connectionViews(): Iterable<ConnView> {
    for (const perConn of this.subs.values()) {
      const first = perConn.values().next().value
      if (first) yield first.sub.conn
    }
  }

  /** the subscriptions of `connId` here */
  *of(connId: string): Iterable<Subscription> {
    for (const { sub } of this.subs.get(connId)?.values() ?? []) yield sub
  }

  /** the subscription `subId` of `connId` now (a REQ with the same id replaces it) */
  get(connId: string, subId: string): Subscription | undefined {
    return this.subs.get(connId)?.get(subId)?.sub
  }

  add(conn: ConnView, subId: string, filters: Filter[], held = false): Subscription {
    this.remove(conn.id, subId)
    const sub: Subscription = { conn, subId, filters, ...(held ? { held: { events: [], bytes: 0 } } : {}) }
    const entries: [string | null, Entry][] = []
    for (const filter of filters) {
      const entry = { sub, filter }
      const keys = keysOfFilter(filter)
      if (keys === null) {
        this.wildcard.add(entry)
        entries.push([null, entry])
        continue
      }
      for (const k of keys) {
        const set = this.byKey.get(k) ?? new Set<Entry>()
        this.byKey.set(k, set)
        set.add(entry)
        entries.push([k, entry])
      }
    }
    const perConn = this.subs.get(conn.id) ?? new Map()
    this.subs.set(conn.id, perConn)
    perConn.set(subId, { sub, entries })
    this.count++
    return sub
  }

  remove(connId: string, subId: string): void {
    const perConn = this.subs.get(connId)
    const found = perConn?.get(subId)
    if (!perConn || !found) return
    for (const [k, entry] of found.entries) {
      if (k === null) this.wildcard.delete(entry)
      else {
        const set = this.byKey.get(k)
        set?.delete(entry)
        if (set && set.size === 0) this.byKey.delete(k)
      }
    }
    perConn.delete(subId)
    this.count--
    if (perConn.size === 0) this.subs.delete(connId)
  }

  removeConnection(connId: string): void {
    const perConn = this.subs.get(connId)
    if (!perConn) return
    for (const subId of [...perConn.keys()]) this.remove(connId, subId)
  }

  /** Every subscription with at least one filter matching `e`, each once. */
  match(e: NostrEvent): Subscription[] {
    const out = new Set<Subscription>()
    const consider = (set: Set<Entry> | undefined) => {
      if (!set) return
      for (const entry of set) if (!out.has(entry.sub) && matchFilter(entry.filter, e)) out.add(entry.sub)
    }
    consider(this.byKey.get(`i:${e.id}`))
    consider(this.byKey.get(`a:${e.pubkey}`))
    consider(this.byKey.get(`k:${e.kind}`))
    for (const t of e.tags) {
      if (t[0] !== undefined && t[0].length === 1 && t[1] !== undefined) consider(this.byKey.get(`t:${t[0]}:${t[1]}`))
    }
    consider(this.wildcard)
    return [...out]
  }
}

function keysOfFilter(f: Filter): string[] | null {
  if (f.ids) return f.ids.map((id) => `i:${id}`)
  if (f.authors) return f.authors.map((a) => `a:${a}`)
  if (f.tags) {
    const first = Object.entries(f.tags)[0]
    if (first) return first[1].map((v) => `t:${first[0]}:${v}`)
  }
  if (f.kinds) return f.kinds.map((k) => `k:${k}`)
  return null
}
