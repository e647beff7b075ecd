// A community actor's housekeeping: the banned event ids (loaded beside the actor, before writes are served),
// and the sweep that forgets connections whose Disconnect never arrived and channel writes that never came back.

import { reason } from '../../protocols/reasons.js'
import type { ActorContext } from '../kernel/index.js'
import { tellUntilTaken } from '../kernel/index.js'
import { releasePresence } from './community-presence.js'
import type { CommunityDeps, CommunityState } from './community-state.js'
import { republish } from './community-writes.js'
import { type CommunityMsg, REDELIVER } from './messages.js'

type Ctx = ActorContext<CommunityMsg>

/**
 * A channel change whose result never came back stops holding writes after this; the writes it held are
 * answered `error:` rather than decided late: their senders' asks end at 30 s, and a write decided after its
 * sender heard `error:` would be a surprise. Swept every 10 s, so they hear within 30 s at most.
 */
const STUCK_WRITE_MS = 20_000

/**
 * Banned events (NIP-86 banevent) are few: kept in memory, re-read whenever the record is (and on every
 * restart). The read runs beside the actor; its result comes back as a message.
 */
export function loadBannedEvents(ctx: Ctx, deps: CommunityDeps): void {
  // writes wait for this answer: one the actor could not take (its mailbox full) is offered again
  const deliver = (msg: Extract<CommunityMsg, { type: 'BannedEventsLoaded' | 'BannedEventsFailed' }>) =>
    tellUntilTaken(ctx.self, msg, REDELIVER)
  deps.communities.listBannedEvents(deps.record.id).then(
    (list) => deliver({ type: 'BannedEventsLoaded', ids: list.map((e) => e.value) }),
    (error: unknown) => deliver({ type: 'BannedEventsFailed', error }),
  )
}

/**
 * An id banned or allowed since leaves the inbound guard too: a banned one was deleted, and a resend of an
 * allowed one must reach the store rather than be answered `duplicate:`. Writes held for the first load go on.
 */
export function onBannedEventsLoaded(state: CommunityState, ids: string[], ctx: Ctx, deps: CommunityDeps): CommunityState {
  const next = new Set(ids)
  for (const id of [...state.current.bannedEvents, ...next]) state.recent.delete(id)
  state.current.bannedEvents = next
  state.current.bannedLoaded = true
  if (!state.writes.ready) republish(state, state.writes.started(), ctx, deps)
  return state
}

/** A connection gone: its subscriptions, its registry entry and its presence holds. */
export function forget(state: CommunityState, connId: string, deps: CommunityDeps): void {
  state.index.removeConnection(connId)
  state.conns.delete(connId)
  // best effort, beside the actor: a lost release leaves the presence to expire with its TTL
  void releasePresence(state.presenceHolds, connId, deps.presence)
}

/** Connections that closed without their Disconnect reaching us (a full mailbox, a restart) are forgotten. */
export function onSweep(state: CommunityState, deps: CommunityDeps): CommunityState {
  const closed = new Set<string>()
  for (const conn of state.conns.values()) if (conn.queue.closed) closed.add(conn.id)
  for (const conn of state.index.connectionViews()) if (conn.queue.closed) closed.add(conn.id)
  for (const connId of state.presenceHolds.keys()) if (!state.conns.has(connId)) closed.add(connId)
  for (const connId of closed) forget(state, connId, deps)
  if (closed.size > 0)
    deps.log.info({ community: deps.record.id, connections: closed.size }, 'forgot connections closed without a Disconnect')
  // a page's ids are remembered against live copies for a few seconds only (community-reads.ts)
  const now = deps.nowMs()
  for (const sub of state.index.all()) if (sub.sent && sub.sent.untilMs < now) sub.sent = undefined
  for (const held of state.writes.expire(deps.nowMs(), STUCK_WRITE_MS))
    held.reply({ accepted: false, message: reason('error', 'the channel change this event waited for did not complete; send it again') })
  return state
}
