// What a community serves to readers: REQ and COUNT. They run beside the actor, never inside it (docs/architecture.md §6.4):
// the actor registers the subscription live at once (its live events are held), and the read path checks
// the read policy, takes the access options, queries the store and the presence store, and hands the page
// back as a ReadResult. The actor then sends the page, EOSE and the held live events (those the page did not
// already carry): no event falls between the stored page and the live feed, and no write waits for a read.
import { StoreError } from '../../infra/store/event-store.js'
import { canMatchAnnouncements } from '../../protocols/agent-registry.js'
import { effectiveLimit, type Filter } from '../../protocols/nip01/filter.js'
import { closedFrame, eoseFrame, eventFrame } from '../../protocols/nip01/relay-message.js'
import { type Reason, reason } from '../../protocols/reasons.js'
import { type ActorContext, pipeTo, tellUntilTaken } from '../kernel/index.js'
import { lapsedAnnouncements, readLeaseAware } from '../registry/lease-reads.js'
import type { AccessGate } from './access-gate.js'
import { queryPresence } from './community-presence.js'
import type { CommunityDeps } from './community-state.js'
import { mintInvite } from './invite-requests.js'
import { isOpen, type LiveFeed, lose } from './live-feed.js'
import { type CommunityMsg, type Page, REDELIVER } from './messages.js'
import type { ReadSlots } from './read-slots.js'
import type { ConnView, Subscription, SubscriptionIndex } from './subscription-index.js'

export interface ReadState {
  gate: AccessGate
  index: SubscriptionIndex
  feed: LiveFeed
  reads: ReadSlots
  /** the connections this community holds: a read whose connection left is not run */
  conns: { has(connId: string): boolean }
  /** stores started (saves, channel changes, channel state) whose effect this actor has not handled yet */
  inflight: { effects: number }
}

export type ReadDeps = Pick<
  CommunityDeps,
  'record' | 'store' | 'limits' | 'metrics' | 'counters' | 'cluster' | 'presence' | 'nowSeconds' | 'nowMs' | 'log' | 'sign' | 'invites'
>
type Ctx = ActorContext<CommunityMsg>

/**
 * Stored rows one filter may read to serve announcements lease-aware (REQ's over-fetch, COUNT's lapsed ones):
 * 10 × maxLimit (5000 by default), about what ten full pages cost; past it a page may come back short.
 */
const leaseScanMaxEvents = (deps: ReadDeps) => 10 * deps.limits.maxLimit

/** How long the ids of a page are remembered against a live copy of the same event still on its way. */
const SENT_MEMORY_MS = 10_000
const LIVE_UNAVAILABLE = reason('error', 'live events from other nodes are unavailable right now; subscribe again shortly')
// the connection's own reads fill its waiting places: it can fix that by waiting for their answers
const TOO_MANY_READS = reason('rate-limited', 'too many reads waiting on this connection; wait for their answers')
// the result of a read beside the actor is offered again while the actor is down, as writes' results are
const PIPE = REDELIVER

export function onSubscribe<S extends ReadState>(state: S, msg: Extract<CommunityMsg, { type: 'Subscribe' }>, ctx: Ctx, deps: ReadDeps): S {
  const { conn, subId } = msg
  const filters = msg.filters.map((f) => ({ ...f, limit: effectiveLimit(f, deps.limits) }))
  // live first: what is decided from now on is held for this subscription until its page is sent
  const sub = state.index.add(conn, subId, msg.filters, true)
  const slot = state.reads.take(conn.id)
  if (!slot) {
    lose(state.index, [sub], TOO_MANY_READS)
    return state
  }
  // a REQ closed or replaced while it waited for its turn is not read at all
  const read = slot.run(() => (current(state.index, sub) ? readPage(state.gate, conn, filters, deps) : Promise.resolve(GONE)))
  pipeTo(ctx.self, read, (outcome): CommunityMsg => ({ type: 'ReadResult', sub, outcome }), {
    ...PIPE,
    onGiveUp: () => lose(state.index, [sub], reason('error', 'this community is unavailable; subscribe again shortly')),
  })
  return state
}

const GONE = reason('error', 'subscription closed')
const current = (index: SubscriptionIndex, sub: Subscription) => index.get(sub.conn.id, sub.subId) === sub && isOpen(sub)

/** A read refused or stopped for its cost answers the client and goes on; any other failure is an outage. */
const isOverload = (error: unknown) => error instanceof StoreError && error.overloaded
const TOO_COSTLY = reason('error', 'query too expensive: stopped at its time budget, or too many reads waiting; narrow it or retry')
const OVER_BUDGET = {
  rows: reason('error', 'query too expensive: it examined more rows than a read may; narrow its filters'),
  time: reason('error', 'query too expensive: it ran longer than a read may; narrow its filters'),
} as const

/** What a reader hears of a read stopped for its cost; one over its own budget is counted by the bound it passed. */
function overloadReason(error: unknown, conn: ConnView, deps: ReadDeps): Reason {
  const over = error instanceof StoreError ? error.over : undefined
  if (!over) return TOO_COSTLY
  deps.metrics.readsRefused.inc({ reason: over.reason })
  conn.chargeRead?.(over.rows)
  return OVER_BUDGET[over.reason]
}

/** Beside the actor: policy, access options, the store and the presence store, and an invite when one is asked for. */
async function readPage(gate: AccessGate, conn: ConnView, filters: Filter[], deps: ReadDeps): Promise<Page | Reason> {
  const refused = await gate.checkRead(conn).catch(() => reason('error', 'could not check access'))
  if (refused) return refused
  const minted = await mintInvite(filters, conn, gate, deps)
  if (typeof minted === 'string') return minted
  // live events from other nodes must start arriving before the query, or one could fall in between
  const live = await deps.cluster.link.ensureInterest()
  const end = deps.metrics.storeLatency.startTimer({ op: 'query' })
  try {
    const options = await gate.readOptions(conn, deps.nowSeconds(), filters)
    // kind 20001 is never stored: its current presence comes from the presence store (docs/architecture.md §8), through
    // the same rule as the store: nothing from a channel this reader may not see
    // an announcement (31990) is served only while its author's lease is live (docs/agent-registry.md)
    const read = (fs: Filter[]) => deps.store.query(deps.record.id, fs, options)
    const [stored, presence] = await Promise.all([
      readLeaseAware(filters, read, deps.presence.store, deps.record.id, leaseScanMaxEvents(deps)),
      queryPresence(filters, deps.presence, options.hiddenChannels),
    ])
    return { stored, presence, minted, live }
  } finally {
    end()
  }
}

/**
 * A REQ's page is read: send it, EOSE, then what was held; or CLOSED. A store failure (a REQ's, or a COUNT's
 * whose asker heard `error:` already) crashes the actor so supervision sees the outage.
 */
export function onReadResult<S extends ReadState>(state: S, msg: Extract<CommunityMsg, { type: 'ReadResult' }>, deps: ReadDeps): S {
  const { sub, outcome } = msg
  if (sub === undefined || !outcome.ok || typeof outcome.value === 'string') return readFailed(state, msg, deps)
  // replaced by a REQ with the same id, closed, or the connection gone: this page is nobody's now
  if (current(state.index, sub)) sendPage(state, sub, outcome.value, deps)
  return state
}

/** A refused REQ is closed; a failed one too, and a store outage (a REQ's or a COUNT's) goes on to supervision. */
function readFailed<S extends ReadState>(state: S, { sub, outcome }: Extract<CommunityMsg, { type: 'ReadResult' }>, deps: ReadDeps): S {
  const overload = !outcome.ok && isOverload(outcome.error)
  if (sub !== undefined && current(state.index, sub)) {
    state.index.remove(sub.conn.id, sub.subId)
    const why = outcome.ok
      ? (outcome.value as Reason)
      : overload
        ? overloadReason(outcome.error, sub.conn, deps)
        : reason('error', 'could not query events')
    // the connection still counts the id until the client reuses or closes it (NIP-01 clients do)
    sub.conn.queue.pushControl(closedFrame(sub.subId, why))
  }
  if (outcome.ok) return state
  if (overload) {
    deps.log.warn({ err: outcome.error, community: deps.record.id }, 'a REQ was stopped for its cost')
    return state
  }
  // the client heard of the outage at once; the actor crashes so supervision sees it (docs/architecture.md §10)
  throw outcome.error
}

/** The stored page, EOSE, then the live events held meanwhile that the page did not carry: the subscription is live. */
function sendPage(state: ReadState, sub: Subscription, { stored, presence, minted, live }: Page, deps: ReadDeps): void {
  const held = sub.held?.events ?? []
  sub.held = undefined
  // only ids whose live copy may still come need remembering: a save in flight, an event waiting in the
  // feed, or another node's event on its way through the bus
  const remember =
    stored.length > 0 && (held.length > 0 || state.inflight.effects > 0 || state.feed.waiting > 0 || deps.cluster.link.clustered)
  const ids = remember ? new Set(stored.map((s) => s.id)) : undefined
  const page = stored.map((s) => eventFrame(sub.subId, s.raw))
  for (const raw of [...presence, ...minted]) page.push(eventFrame(sub.subId, raw))
  page.push(eoseFrame(sub.subId))
  sub.conn.queue.pushPage(page)
  // without the bus there is no gap-free live feed: the stored page, then the truth
  if (!live) {
    lose(state.index, [sub], LIVE_UNAVAILABLE)
    return
  }
  let delivered = 0
  for (const h of held) if (!ids?.has(h.id) && sub.conn.queue.push(eventFrame(sub.subId, h.raw))) delivered++
  if (delivered) {
    deps.metrics.fanoutDeliveries.inc(delivered)
    deps.counters?.deliveredOut(delivered)
  }
  if (ids) sub.sent = { ids, untilMs: deps.nowMs() + SENT_MEMORY_MS }
}

export function onCount<S extends ReadState>(state: S, msg: Extract<CommunityMsg, { type: 'Count' }>, ctx: Ctx, deps: ReadDeps): S {
  const slot = state.reads.take(msg.conn.id)
  if (!slot) {
    msg.reply(TOO_MANY_READS)
    return state
  }
  // NIP-45: a filter's own limit caps what it counts; without one the read budget (rows, time) bounds the count
  const filters = msg.filters
  const counted = slot.run(async () => {
    // a COUNT whose connection closed while it waited is not read at all
    if (!state.conns.has(msg.conn.id)) return GONE
    const refused = await state.gate.checkRead(msg.conn).catch(() => reason('error', 'could not check access'))
    if (refused) return refused
    const options = await state.gate.readOptions(msg.conn, deps.nowSeconds(), filters)
    const counted = deps.store.count(deps.record.id, filters, options)
    if (!canMatchAnnouncements(filters)) return counted
    // announcements count only while their author's lease is live: the stored ones without one come off
    const read = (fs: Filter[]) => deps.store.query(deps.record.id, fs, options)
    const [n, lapsed] = await Promise.all([
      counted,
      lapsedAnnouncements(filters, read, deps.presence.store, deps.record.id, leaseScanMaxEvents(deps)),
    ])
    return Math.max(0, n - lapsed)
  })
  // the answer goes straight to the asker; the actor hears only that a slot is free (and of an outage)
  counted.then(
    (n) => msg.reply(n),
    (error: unknown) => msg.reply(isOverload(error) ? overloadReason(error, msg.conn, deps) : reason('error', 'could not count')),
  )
  // the actor hears only of an outage (for supervision), as with a failed REQ
  counted.catch((error: unknown) => {
    if (!isOverload(error)) tellUntilTaken(ctx.self, { type: 'ReadResult', outcome: { ok: false, error } }, PIPE)
  })
  return state
}
