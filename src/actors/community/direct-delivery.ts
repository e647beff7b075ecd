// An event for one connection alone (a job's assignment, docs/jobs.md): sent on the first subscription of
// that connection it matches, never fanned out to the others that would match it (another connection of the
// same agent must not start the same job).

import type { NostrEvent } from '../../protocols/nip01/event.js'
import { matchFilter } from '../../protocols/nip01/filter.js'
import { eventFrame } from '../../protocols/nip01/relay-message.js'
import { isOpen } from './live-feed.js'
import type { Subscription, SubscriptionIndex } from './subscription-index.js'

/** false when the connection holds no open, live subscription the event matches (it left, or is not listening) */
export function deliverToConnection(index: SubscriptionIndex, conn: string, event: NostrEvent, raw: string): boolean {
  for (const sub of index.match(event)) {
    // a subscription still reading its page would put this behind its stored events: none of those matter here
    if (sub.conn.id !== conn || !isOpen(sub)) continue
    return sub.conn.queue.push(eventFrame(sub.subId, raw))
  }
  return false
}

/**
 * Whether `conn` holds an open, live subscription that an event for `agent` created at `second` would match
 * (where deliverToConnection would send it). Remembered per subscription (its filters never change: a REQ
 * again makes a new one), agent and second: asked for many connections on every dispatch, each filter is
 * matched once a second. `probe` builds the event only when a subscription must be matched again.
 */
export function listenCache(): (index: SubscriptionIndex, conn: string, agent: string, second: number, probe: () => NostrEvent) => boolean {
  const seen = new WeakMap<Subscription, { agent: string; second: number; matches: boolean }>()
  return (index, conn, agent, second, probe) => {
    let event: NostrEvent | undefined
    for (const sub of index.of(conn)) {
      if (!isOpen(sub)) continue
      let known = seen.get(sub)
      if (known === undefined || known.second !== second || known.agent !== agent) {
        event ??= probe()
        const e = event
        known = { agent, second, matches: sub.filters.some((f) => matchFilter(f, e)) }
        seen.set(sub, known)
      }
      if (known.matches) return true
    }
    return false
  }
}
