// What a community actor serves to readers: REQ and COUNT (the read policy, then the store query with the
// access rule inside it, so hidden events never take a place in a limit), and live fan-out through the same gate.
import type { StoredEvent } from '../../infra/store/event-store.js'
import type { NostrEvent, VerifiedEvent } from '../../protocols/nip01/event.js'
import { effectiveLimit } from '../../protocols/nip01/filter.js'
import { closedFrame, eoseFrame, eventFrame } from '../../protocols/nip01/relay-message.js'
import { type Reason, reason } from '../../protocols/reasons.js'
import type { AccessGate } from './access-gate.js'
import type { CommunityDeps } from './community-actor.js'
import { queryPresence } from './community-presence.js'
import type { CommunityMsg } from './messages.js'
import type { Subscription, SubscriptionIndex } from './subscription-index.js'

export interface ReadState {
  gate: AccessGate
  index: SubscriptionIndex
}

export type ReadDeps = Pick<CommunityDeps, 'record' | 'store' | 'limits' | 'metrics' | 'cluster' | 'presence' | 'nowSeconds'>

export async function onSubscribe<S extends ReadState>(state: S, msg: Extract<CommunityMsg, { type: 'Subscribe' }>, deps: ReadDeps) {
  const { conn, subId, filters } = msg
  const clamped = filters.map((f) => ({ ...f, limit: effectiveLimit(f, deps.limits) }))
  const refused = await state.gate.checkRead(conn).catch(() => reason('error', 'could not check access'))
  if (refused) {
    // the connection still counts the id until the client reuses or closes it (NIP-01 clients do)
    conn.queue.pushControl(closedFrame(subId, refused))
    return state
  }
  // live events from other nodes must start arriving before this REQ's EOSE, or one could fall in between
  const live = await deps.cluster.link.ensureInterest()
  const end = deps.metrics.storeLatency.startTimer({ op: 'query' })
  let stored: StoredEvent[]
  let presence: string[]
  try {
    const options = await state.gate.readOptions(conn, deps.nowSeconds())
    // kind 20001 is never stored: its current presence comes from the presence store (DESIGN §6)
    // presence answers through the same rule as the store: nothing from a channel this reader may not see
    ;[stored, presence] = await Promise.all([
      deps.store.query(deps.record.id, clamped, options),
      queryPresence(clamped, deps.presence, options.hiddenChannels),
    ])
  } catch (error) {
    // The client hears of the outage at once; the actor crashes so supervision sees it (DESIGN §3).
    conn.queue.pushControl(closedFrame(subId, reason('error', 'could not query events')))
    throw error
  } finally {
    end()
  }
  for (const s of stored) conn.queue.push(eventFrame(subId, s.raw))
  for (const raw of presence) conn.queue.push(eventFrame(subId, raw))
  conn.queue.push(eoseFrame(subId))
  // without the bus there is no gap-free live feed: the stored page, then the truth
  if (!live) conn.lose(subId, LIVE_UNAVAILABLE)
  else state.index.add(conn, subId, filters)
  return state
}

export async function onCount<S extends ReadState>(state: S, msg: Extract<CommunityMsg, { type: 'Count' }>, deps: ReadDeps) {
  const refused = await state.gate.checkRead(msg.conn).catch(() => reason('error', 'could not check access'))
  if (refused) {
    msg.reply(refused)
    return state
  }
  // an outage answers at once and still reaches supervision, as a failed REQ does
  try {
    msg.reply(await deps.store.count(deps.record.id, msg.filters, await state.gate.readOptions(msg.conn, deps.nowSeconds())))
  } catch (error) {
    msg.reply(reason('error', 'could not count'))
    throw error
  }
  return state
}

/**
 * Live delivery, local and remote alike, through the access gate: one frame per allowed subscription, built
 * from the stored raw JSON by concatenation. A gate lookup that fails delivers nothing (fail closed).
 */
export async function fanOut(state: ReadState, event: VerifiedEvent, raw: string, deps: Pick<CommunityDeps, 'record' | 'log' | 'metrics'>) {
  // the connection's own set is the truth: a CLOSE whose Unsubscribe was lost stops delivery all the same
  const matched: Subscription[] = state.index.match(event).filter(isOpen)
  if (matched.length === 0) return
  let allowed: Subscription[]
  try {
    allowed = await state.gate.deliverable(event, matched)
  } catch (error) {
    deps.log.error({ err: error, community: deps.record.id, eventId: event.id }, 'access lookup failed: event not delivered live')
    deps.metrics.accessLookupFailures.inc()
    // fail closed, but not silently: each subscription the event may have been due to is told, and closed
    const lost = lose(state.index, matched, reason('error', 'could not check access for an event; subscribe again to catch up'))
    if (lost > 0) deps.metrics.subscriptionsLost.inc(lost)
    return
  }
  // pushes to a closed socket fail; the sweep forgets those connections
  let delivered = 0
  for (const sub of allowed) if (sub.conn.queue.push(eventFrame(sub.subId, raw))) delivered++
  if (delivered) deps.metrics.fanoutDeliveries.inc(delivered)
}

const LIVE_UNAVAILABLE = reason('error', 'live events from other nodes are unavailable right now; subscribe again shortly')

const isOpen = (sub: Subscription) => sub.conn.subs.has(sub.subId) && !sub.conn.queue.closed

/**
 * An event that matched these subscriptions could not be delivered (a full mailbox, a community down): each
 * one is closed with `why` (CLOSED), never left open with a gap. Returns how many were closed.
 */
export function loseMatching(index: SubscriptionIndex, event: NostrEvent, why: Reason): number {
  return lose(index, index.match(event), why)
}

/** Every live subscription here may have missed events (the bus lost our channel): close them all. */
export function loseAll(index: SubscriptionIndex, why: Reason): number {
  return lose(index, [...index.all()], why)
}

function lose(index: SubscriptionIndex, subs: Subscription[], why: Reason): number {
  let lost = 0
  for (const sub of subs) {
    if (!isOpen(sub)) continue
    sub.conn.lose(sub.subId, why)
    index.remove(sub.conn.id, sub.subId)
    lost++
  }
  return lost
}
