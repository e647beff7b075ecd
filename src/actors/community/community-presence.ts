// Presence (docs/architecture.md §8, docs/presence.md): kind 20001 heartbeats are kept in the PresenceStore (the whole signed event, so a REQ
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
import { type NostrEvent, parseEventShape } from '../../protocols/nip01/event.js'
import { type Filter, matchFilter } from '../../protocols/nip01/filter.js'
import { KIND_PRESENCE } from '../../protocols/nip01/kinds.js'
import { type Reason, reason } from '../../protocols/reasons.js'
import type { ConnectionRegistry, ConnView } from './subscription-index.js'

/** docs/presence.md: a status is short text, at most 128 bytes of UTF-8 */
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

/** A presence this connection holds for `pubkey`; `acquired`: this heartbeat took the hold (and counts it in the store). */
export interface PresenceHold {
  connId: string
  pubkey: string
  acquired: boolean
}

/**
 * A heartbeat's checks and its hold, decided by the actor at once (two heartbeats in flight never both count
 * the same connection), or why not. The store's part follows beside the actor (recordPresence).
 */
export function holdPresence(
  holds: PresenceHolds,
  conns: ConnectionRegistry,
  event: NostrEvent,
  conn: ConnView | undefined,
): PresenceHold | Reason {
  if (Buffer.byteLength(event.content, 'utf8') > MAX_PRESENCE_STATUS_BYTES)
    return reason('invalid', `presence status is longer than ${MAX_PRESENCE_STATUS_BYTES} bytes`)
  const refused = checkHolder(conns, event, conn)
  if (refused || conn === undefined) return refused ?? reason('auth-required', 'presence needs AUTH as its author')
  let held = holds.get(conn.id)
  if (!held) {
    held = new Set()
    holds.set(conn.id, held)
  }
  const acquired = !held.has(event.pubkey)
  held.add(event.pubkey)
  return { connId: conn.id, pubkey: event.pubkey, acquired }
}

function checkHolder(conns: ConnectionRegistry, event: NostrEvent, conn: ConnView | undefined): Reason | undefined {
  if (conn === undefined || !conn.authed.has(event.pubkey)) return reason('auth-required', 'presence needs AUTH as its author')
  // a heartbeat that arrives after its connection's Disconnect would be counted and never released
  if (!conns.has(conn.id)) return reason('restricted', 'connection closed')
  return undefined
}

/**
 * A goodbye (content "offline", docs/agent-registry.md): the same checks as a heartbeat; this connection's
 * hold is given back at once (so its close releases nothing twice). Resolves whether it held one.
 */
export function unholdForBye(
  holds: PresenceHolds,
  conns: ConnectionRegistry,
  event: NostrEvent,
  conn: ConnView | undefined,
): boolean | Reason {
  const refused = checkHolder(conns, event, conn)
  if (refused || conn === undefined) return refused ?? reason('auth-required', 'presence needs AUTH as its author')
  return holds.get(conn.id)?.delete(event.pubkey) ?? false
}

/**
 * Beside the actor: a goodbye releases this connection's count and clears the presence at once, whoever
 * else holds it: the agent said it is gone, so its lease ends now rather than with its TTL.
 */
export async function clearPresence(held: boolean, pubkey: string, deps: PresenceDeps): Promise<void> {
  if (held) await deps.store.disconnect(deps.community, pubkey)
  await deps.store.clear(deps.community, pubkey)
}

/** Beside the actor: the heartbeat into the presence store. Rejects (GateError) when the store is unreachable. */
export async function recordPresence(hold: PresenceHold, event: NostrEvent, raw: string, deps: PresenceDeps): Promise<void> {
  if (hold.acquired) {
    await deps.store.connect(deps.community, event.pubkey, deps.ttlSeconds)
    // counted in the store now: the hold stays even if the set below fails, so the close releases it
    hold.acquired = false
  }
  await deps.store.set(deps.community, event.pubkey, raw, deps.ttlSeconds)
}

/** The store did not take the heartbeat: a hold it took is given back (nothing was counted for it). */
export function unholdPresence(holds: PresenceHolds, hold: PresenceHold): void {
  if (hold.acquired) holds.get(hold.connId)?.delete(hold.pubkey)
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
    const event = parseEventShape(raw)
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

/** The pubkeys whose presence a connection of this node holds. */
export function pubkeysHeld(holds: PresenceHolds): Set<string> {
  const out = new Set<string>()
  for (const pubkeys of holds.values()) for (const p of pubkeys) out.add(p)
  return out
}
