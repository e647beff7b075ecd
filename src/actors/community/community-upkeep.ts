// A community actor's housekeeping: the record it serves (replaced on RecordChanged), the banned event ids
// (loaded beside the actor, before any write is judged), and the sweep that forgets connections whose
// Disconnect never arrived and channel writes that never came back.
import type { CommunityRecord } from '../../infra/store/community-store.js'
import { reason } from '../../protocols/reasons.js'
import { pipeTo } from '../kernel/index.js'
import { forget } from './community-connections.js'
import type { CommunityDeps, CommunityState, Ctx } from './community-state.js'
import { republish } from './community-writes.js'
import { isNamedMember } from './membership-changes.js'
import { type CommunityMsg, REDELIVER } from './messages.js'

type Msg<T extends CommunityMsg['type']> = Extract<CommunityMsg, { type: T }>

/**
 * A channel change whose result never came back stops holding writes after this; the writes it held are
 * answered `error:` rather than decided late: their senders' asks end at 30 s, and a write decided after its
 * sender heard `error:` would be a surprise. Swept every 10 s, so they hear within 30 s at most.
 */
const STUCK_WRITE_MS = 20_000

/**
 * Banned events (NIP-86 banevent) are few: kept in memory, re-read whenever the record is (and on every
 * restart). The read runs beside the actor; writes wait for its answer, offered again while the actor
 * cannot take it.
 */
export function loadBannedEvents(ctx: Ctx, deps: CommunityDeps): void {
  const ids = deps.communities.listBannedEvents(deps.record.id).then((list) => list.map((e) => e.value))
  pipeTo(ctx.self, ids, (outcome): CommunityMsg => ({ type: 'BannedEventsRead', outcome }), REDELIVER)
}

/**
 * An id banned or allowed since leaves the inbound guard too: a banned one was deleted, and a resend of an
 * allowed one must reach the store rather than be answered `duplicate:`. Writes held for the first load go on.
 */
export function onBannedEventsRead(state: CommunityState, msg: Msg<'BannedEventsRead'>, ctx: Ctx, deps: CommunityDeps): CommunityState {
  const { outcome } = msg
  if (!outcome.ok) {
    // before the first load no write may be judged without the list: crash, and let supervision retry
    if (!state.writes.ready) throw outcome.error
    deps.log.warn({ err: outcome.error, community: deps.record.id }, 'banned events unavailable; keeping the previous list')
    return state
  }
  const next = new Set(outcome.value)
  for (const id of [...state.current.bannedEvents, ...next]) state.recent.delete(id)
  state.current.bannedEvents = next
  state.current.bannedLoaded = true
  if (!state.writes.ready) republish(state, state.writes.started(), ctx, deps)
  return state
}

export function onRecordChanged(state: CommunityState, msg: Msg<'RecordChanged'>, ctx: Ctx, deps: CommunityDeps): CommunityState {
  const before = state.current.record
  state.current.record = msg.record
  // an admin or a roster agent came or went: the NIP-43 member list names them
  if (namedMembersDiffer(before, msg.record)) state.memberList.refresh()
  // roster, admins or the allowed list may have changed: community membership answers are re-read
  state.gate.invalidate({ op: 'InvalidateMembers' })
  loadBannedEvents(ctx, deps)
  return state
}

function namedMembersDiffer(a: CommunityRecord, b: CommunityRecord): boolean {
  const named = (r: CommunityRecord) => [...r.admins, ...r.agents.map((x) => x.pubkey)]
  return named(a).length !== named(b).length || named(a).some((p) => !isNamedMember(b, p))
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
  for (const held of state.writes.expire(now, STUCK_WRITE_MS))
    held.reply({ accepted: false, message: reason('error', 'the channel change this event waited for did not complete; send it again') })
  return state
}
