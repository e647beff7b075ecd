// An event for one connection alone (a job's assignment, docs/jobs.md): sent on the first subscription of
// that connection it matches, never fanned out to the others that would match it (another connection of the
// same agent must not start the same job).

import type { NostrEvent } from '../../protocols/nip01/event.js'
import { matchFilter } from '../../protocols/nip01/filter.js'
import { eventFrame } from '../../protocols/nip01/relay-message.js'
import { isOpen } from './live-feed.js'
import type { SubscriptionIndex } from './subscription-index.js'

/** false when the connection holds no open, live subscription the event matches (it left, or is not listening) */
export function deliverToConnection(index: SubscriptionIndex, conn: string, event: NostrEvent, raw: string): boolean {
  for (const sub of index.match(event)) {
    // a subscription still reading its page would put this behind its stored events: none of those matter here
    if (sub.conn.id !== conn || !isOpen(sub)) continue
    return sub.conn.queue.push(eventFrame(sub.subId, raw))
  }
  return false
}

/** whether `conn` holds an open, live subscription `event` would match: where deliverToConnection would send it */
export function listensFor(index: SubscriptionIndex, conn: string, event: NostrEvent): boolean {
  for (const sub of index.of(conn)) if (isOpen(sub) && sub.filters.some((f) => matchFilter(f, event))) return true
  return false
}
