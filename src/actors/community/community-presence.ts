// Presence (DESIGN §6): kind 20001 heartbeats are kept in the PresenceStore (the whole signed event, so a REQ
// can answer with a real event), answered to REQs from there, and released when the connections holding
// them close. Live delivery of 20001 is unchanged: it is an ephemeral event like any other.
//
// Who holds a presence: only a connection AUTHenticated as the event's author. The signature already proves
// authorship, but "cleared when the last connection of that pubkey closes" needs to know which connections
// belong to that pubkey; tying a presence to an authenticated connection is what makes that answerable (an
// unauthenticated relay of someone else's heartbeat would otherwise keep them online after they left).
//
// Limits: a connection counts once per pubkey from its first heartbeat until it closes (AUTH adds pubkeys,
// nothing removes them). In a cluster the count expires with the presence TTL unless heartbeats refresh it,
// so a crashed node pins nobody for longer than one TTL; a count that expired while a quiet connection still
// held it can reach 0 early on another connection's close, which only shows that pubkey offline until its
// next heartbeat.
import type { PresenceStore } from '../../infra/gates/presence.js'
import type { Logger } from '../../infra/log.js'
import type { NostrEvent } from '../../protocols/nip01/event.js'
import { type Filter, matchFilter } from '../../protocols/nip01/filter.js'
import { type Reason, reason } from '../../protocols/reasons.js'
import type { ConnectionRegistry, ConnView } from './subscription-index.js'

export const KIND_PRESENCE = 20001
/** the issue: a status is short text, at most 128 bytes of UTF-8 */
export const MAX_PRESENCE_STATUS_BYTES = 128

export interface PresenceDeps {
  community: string
  store: PresenceStore
  /** 3 × presenceHeartbeatSeconds: two lost heartbeats in a row don't show someone offline */
  ttlSeconds: number
  log: Logger
}

/** connection id → the pubkeys whose presence it holds (each counted once in the store) */
export type PresenceHolds = Map<string, Set<string>>

/**
 * Records a heartbeat as the author's presence, or says why not. Rejects (GateError) when the store is
 * unreachable: the caller answers `error:`.
 */
export async function setPresence(
  holds: PresenceHolds,
  conns: ConnectionRegistry,
  event: NostrEvent,
  raw: string,
  conn: ConnView | undefined,
  deps: PresenceDeps,
): Promise<Reason | null> {
  if (Buffer.byteLength(event.content, 'utf8') > MAX_PRESENCE_STATUS_BYTES)
    return reason('invalid', `presence status is longer than ${MAX_PRESENCE_STATUS_BYTES} bytes`)
  if (conn === undefined || !conn.authed.has(event.pubkey)) return reason('auth-required', 'presence needs AUTH as its author')
  // a heartbeat that arrives after its connection's Disconnect would be counted and never released
  if (!conns.has(conn.id)) return reason('restricted', 'connection closed')
  let held = holds.get(conn.id)
  if (!held?.has(event.pubkey)) {
    await deps.store.connect(deps.community, event.pubkey, deps.ttlSeconds)
    held ??= new Set()
    held.add(event.pubkey)
    holds.set(conn.id, held)
  }
  await deps.store.set(deps.community, event.pubkey, raw, deps.ttlSeconds)
  return null
}

/** The connection closed: release its holds; the store clears a presence when its last holder leaves. */
export async function releasePresence(holds: PresenceHolds, connId: string, deps: PresenceDeps): Promise<void> {
  const held = holds.get(connId)
  holds.delete(connId)
  if (!held) return
  for (const pubkey of held) {
    // best effort: a lost release leaves the presence to expire with its TTL
    await deps.store.disconnect(deps.community, pubkey).catch((error: unknown) => {
      deps.log.warn({ err: error, community: deps.community }, 'presence release failed; it will expire')
    })
  }
}

/**
 * The presence events a REQ asks for: filters naming kind 20001 and at least one author (no authors ⇒ no
 * presence: we never scan a community), checked with the reference matcher for since/until/tags/limit.
 */
export async function queryPresence(filters: Filter[], deps: PresenceDeps, hiddenChannels: readonly string[] = []): Promise<string[]> {
  const asking = filters.filter((f) => f.kinds?.includes(KIND_PRESENCE) && f.authors && f.authors.length > 0)
  const authors = [...new Set(asking.flatMap((f) => f.authors ?? []))]
  if (authors.length === 0) return []
  const found = await deps.store.get(deps.community, authors)
  const events: { event: NostrEvent; raw: string }[] = []
  for (const [pubkey, raw] of found) {
    const event = parseStored(raw)
    if (event?.pubkey !== pubkey || event.kind !== KIND_PRESENCE) continue
    // a heartbeat naming a channel (`h`) is that channel's: hidden from readers who may not see the channel
    if (event.tags.some((t) => t[0] === 'h' && t[1] !== undefined && hiddenChannels.includes(t[1]))) continue
    events.push({ event, raw })
  }
  // newest first, as a REQ answers; one frame per event even when several filters match it
  events.sort((a, b) => b.event.created_at - a.event.created_at)
  const out = new Set<string>()
  for (const f of asking) {
    const matching = events.filter((e) => matchFilter(f, e.event))
    for (const e of matching.slice(0, f.limit ?? matching.length)) out.add(e.raw)
  }
  return [...out]
}

/** Our own writes, but read back from a shared store: anything unparsable is skipped, never sent. */
function parseStored(raw: string): NostrEvent | undefined {
  try {
    const v: unknown = JSON.parse(raw)
    return typeof v === 'object' && v !== null && 'pubkey' in v && 'kind' in v && 'created_at' in v && Array.isArray((v as { tags?: unknown }).tags)
      ? (v as NostrEvent)
      : undefined
  } catch {
    return undefined
  }
}
