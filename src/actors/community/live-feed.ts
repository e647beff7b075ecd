// Live delivery, local and remote alike, in the order the community decided it (docs/architecture.md §6.6: order by
// sequence, never by blocking the mailbox). Most events are decided at once from the access gate's caches;
// one that needs I/O first (a cache miss, a remote event's signature) is decided beside the actor, and every
// event after it waits in this queue until it is: the actor returns at once either way.
import type { CommunityCounters } from '../../infra/console/community-counters.js'
import type { Metrics } from '../../infra/metrics.js'
import { KIND_ANNOUNCEMENT, KIND_DEPARTURE } from '../../protocols/agent-registry.js'
import type { NostrEvent } from '../../protocols/nip01/event.js'
import { eventFrame } from '../../protocols/nip01/relay-message.js'
import { type Reason, reason } from '../../protocols/reasons.js'
import type { AccessGate } from './access-gate.js'
import type { Subscription, SubscriptionIndex } from './subscription-index.js'

export interface LiveFeedDeps {
  community: string
  gate: AccessGate
  index: SubscriptionIndex
  metrics: Pick<Metrics, 'fanoutDeliveries' | 'accessLookupFailures' | 'subscriptionsLost'>
  /** the console's count of this community's deliveries */
  counters?: Pick<CommunityCounters, 'deliveredOut'>
  log: { error(o: object, m: string): void }
  /** live events held for one subscription while its page is read, in bytes; past it the subscription is closed */
  maxHeldBytes: number
  nowMs: () => number
  /** whether `pubkey`'s presence lease is live now: a kind 31990 is delivered only then (docs/agent-registry.md) */
  leaseHeld?: (pubkey: string) => Promise<boolean>
  /**
   * Asked in delivery order, after a remote event's signature: true drops the event here (a channel state
   * version of an older mesh generation than one already delivered: protocols/mesh/state-generation.ts).
   */
  stale?: (event: NostrEvent) => boolean
}

interface Item {
  event: NostrEvent
  raw: string
  matched: Subscription[]
  /** undefined while a lookup runs; 'failed': deliver to none of them, and close them (fail closed, not silently) */
  allowed?: Subscription[] | 'failed'
}

/** Events waiting in one community's feed behind a lookup; past it, their subscriptions are closed. */
const MAX_WAITING_EVENTS = 10_000
const FEED_FULL = reason('error', 'live delivery is waiting on a slow lookup; subscribe again to catch up')
const LOOKUP_FAILED = reason('error', 'could not check access for an event; subscribe again to catch up')
const HELD_TOO_MUCH = reason('error', 'too many live events arrived while stored events were read; subscribe again')

/**
 * How long a delivered announcement is not delivered again (unless its agent departed meanwhile): its own write
 * and the registry's arrival on the agent's first heartbeat may both offer it, in either order (docs/agent-registry.md).
 */
const ANNOUNCED_MEMORY_MS = 60_000
const MAX_ANNOUNCED = 10_000

export class LiveFeed {
  private readonly queue: Item[] = []
  /** per agent, the announcement last delivered and when: the same one offered again is an echo, not an arrival */
  private readonly announced = new Map<string, { id: string; atMs: number }>()

  constructor(private readonly d: LiveFeedDeps) {}

  /** events decided but not yet delivered (waiting for a lookup, or behind one) */
  get waiting(): number {
    return this.queue.length
  }

  /**
   * Deliver `event` to the subscriptions it matches now. `check` (a remote event's signature) must resolve
   * true first; an event that matches nobody costs no check at all.
   */
  offer(event: NostrEvent, raw: string, signed?: () => Promise<boolean>): void {
    // an agent that departed arrives again with the same announcement: that is news, not an echo
    if (event.kind === KIND_DEPARTURE) this.forgetAnnounced(event)
    const matched = this.d.index.match(event).filter(isOpen)
    if (matched.length === 0) return
    const check = event.kind === KIND_ANNOUNCEMENT ? this.leaseCheck(event, signed) : signed
    const item: Item = { event, raw, matched }
    if (check === undefined) item.allowed = this.d.gate.deliverableNow(event, matched)
    if (item.allowed !== undefined && this.queue.length === 0) {
      this.deliver(item)
      return
    }
    // a lookup that hangs (a stalled database, up to its deadline) holds everything behind it: bounded, and
    // what does not fit closes its subscriptions rather than being skipped
    if (this.queue.length >= MAX_WAITING_EVENTS) {
      const lost = lose(this.d.index, matched, FEED_FULL)
      if (lost > 0) this.d.metrics.subscriptionsLost.inc(lost)
      return
    }
    this.queue.push(item)
    if (item.allowed !== undefined) return
    const decide = async () => ((await (check?.() ?? true)) ? this.d.gate.deliverable(event, matched) : [])
    decide().then(
      (allowed) => this.settle(item, allowed),
      (error: unknown) => {
        this.d.log.error({ err: error, community: this.d.community, eventId: event.id }, 'access lookup failed: event not delivered live')
        this.d.metrics.accessLookupFailures.inc()
        this.settle(item, 'failed')
      },
    )
  }

  /** an announcement waits, in order, for its author's lease (after its signature, for a remote one) */
  private leaseCheck(event: NostrEvent, signed?: () => Promise<boolean>): (() => Promise<boolean>) | undefined {
    const held = this.d.leaseHeld
    if (held === undefined) return signed
    return async () => (signed === undefined || (await signed())) && held(event.pubkey)
  }

  private settle(item: Item, allowed: Subscription[] | 'failed') {
    item.allowed = allowed
    while (this.queue[0]?.allowed !== undefined) this.deliver(this.queue.shift()!)
  }

  private deliver(item: Item) {
    const { allowed } = item
    if (allowed === 'failed') {
      const lost = lose(this.d.index, item.matched, LOOKUP_FAILED)
      if (lost > 0) this.d.metrics.subscriptionsLost.inc(lost)
      return
    }
    if (this.d.stale?.(item.event)) return
    if (this.isEcho(item.event, allowed)) return
    let delivered = 0
    const id = item.event.id
    for (const sub of allowed ?? []) {
      // the connection's own set is the truth: a CLOSE whose Unsubscribe was lost stops delivery all the same;
      // and a REQ that replaced this one under the same id gets nothing decided for the old filters
      if (!isOpen(sub) || this.d.index.get(sub.conn.id, sub.subId) !== sub) continue
      if (sub.held) {
        this.hold(sub, id, item.raw)
        continue
      }
      if (sub.sent) {
        if (sub.sent.untilMs < this.d.nowMs()) sub.sent = undefined
        else if (sub.sent.ids.has(id)) continue
      }
      // pushes to a closed socket fail; the sweep forgets those connections
      if (sub.conn.queue.push(eventFrame(sub.subId, item.raw))) delivered++
    }
    if (delivered) {
      this.d.metrics.fanoutDeliveries.inc(delivered)
      this.d.counters?.deliveredOut(delivered)
    }
  }

  /** An announcement delivered a moment ago, its agent not departed since: the second offer of one arrival. */
  private isEcho(event: NostrEvent, allowed: Subscription[] | undefined): boolean {
    if (event.kind !== KIND_ANNOUNCEMENT || !allowed?.length) return false
    const now = this.d.nowMs()
    const last = this.announced.get(event.pubkey)
    if (last?.id === event.id && now - last.atMs < ANNOUNCED_MEMORY_MS) return true
    if (this.announced.size >= MAX_ANNOUNCED) this.announced.delete(this.announced.keys().next().value!)
    this.announced.set(event.pubkey, { id: event.id, atMs: now })
    return false
  }

  private forgetAnnounced(departure: NostrEvent): void {
    const agent = departure.tags.find((t) => t[0] === 'p')?.[1]
    if (agent !== undefined) this.announced.delete(agent)
  }

  private hold(sub: Subscription, id: string, raw: string) {
    const held = sub.held!
    held.events.push({ id, raw })
    held.bytes += raw.length
    if (held.bytes > this.d.maxHeldBytes && lose(this.d.index, [sub], HELD_TOO_MUCH) > 0) this.d.metrics.subscriptionsLost.inc()
  }
}

export const isOpen = (sub: Subscription) => sub.conn.subs.has(sub.subId) && !sub.conn.queue.closed

/** Closes each open subscription of `subs` with `why` (CLOSED), never left open with a gap; returns how many. */
export function lose(index: SubscriptionIndex, subs: Iterable<Subscription>, why: Reason): number {
  let lost = 0
  for (const sub of subs) {
    if (!isOpen(sub) || index.get(sub.conn.id, sub.subId) !== sub) continue
    sub.conn.lose(sub.subId, why)
    index.remove(sub.conn.id, sub.subId)
    lost++
  }
  return lost
}

/** An event that matched these subscriptions could not be delivered: each is closed with `why`. */
export function loseMatching(index: SubscriptionIndex, event: NostrEvent, why: Reason): number {
  return lose(index, index.match(event), why)
}

/** Every live subscription here may have missed events (the bus lost our channel): close them all. */
export function loseAll(index: SubscriptionIndex, why: Reason): number {
  return lose(index, [...index.all()], why)
}
