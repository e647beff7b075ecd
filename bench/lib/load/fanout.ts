// Fan-out load: subscribers on an empty relay, one publisher, deliveries counted and timed per event id.
import type WebSocket from 'ws'
import type { BenchEvent } from '../fixtures'
import { closeAll, connect, openEach, openMany, resolveEvents } from './connect'
import { cores, type Latency, latency, perSecond } from './latency'
import { eventFrames, publishEvents } from './publisher'
import { awaitDeliveries, countDeliveries, subscribeEach } from './subscribers'

/** What every fan-out load counts, on one relay or across nodes. */
export interface FanoutCounts {
  subscribers: number
  published: number
  accepted: number
  deliveries: number
  expectedDeliveries: number
  deliveriesPerSec: number
  elapsedMs: number
  /** CPU the load generator used from first publish to last delivery, in cores */
  loadGenCores: number
  /** subscribers the relay closed during the run (e.g. as slow consumers) */
  closedSubscribers: number
  rejected: Record<string, number>
  incomplete?: string
}

export interface FanoutResult extends FanoutCounts {
  delivery: Latency
}

/**
 * `subscribers` sockets each REQ `filter` (default {kinds:[1], "#t":["bench"]}) on an empty relay and wait for EOSE
 * (`openSubscriber` opens them when given, e.g. authenticated, else plain connections); one publisher
 * socket (on `publisherUrl` when given, else the same relay) then sends the events pipelined (window 200).
 * Events are pre-signed, so instead of embedding the send
 * time in the content the publisher records it per event id (publisher and subscribers share this process's clock).
 * deliveries/s = EVENT frames received by all subscribers / (first publish → last delivery).
 */
export async function fanout(
  url: string,
  opts: {
    subscribers: number
    events: number | BenchEvent[]
    window?: number
    /** an open loop: publish at this rate (events/s) whatever the OKs, instead of a window */
    ratePerSec?: number
    settleSeconds?: number
    /** Host header name (port appended), to reach a community bound to that host */
    host?: string
    /** publish through another relay than the subscribers' (cluster: publisher on node A, subscribers on B) */
    publisherUrl?: string
    /** the subscribers' REQ filter; it must match every event */
    filter?: Record<string, unknown>
    /** opens subscriber `i` (e.g. connected and authenticated as its own key) */
    openSubscriber?: (i: number) => Promise<WebSocket>
    onStart?: () => Promise<void> | void
    onEnd?: () => Promise<void> | void
  },
): Promise<FanoutResult> {
  const events = resolveEvents(opts.events)
  const frames = eventFrames(events)
  const sentAt = new Map<string, number>()
  const subs = opts.openSubscriber
    ? await openEach(opts.subscribers, 50, opts.openSubscriber)
    : await openMany(url, opts.subscribers, 50, opts.host)
  await subscribeEach(subs, opts.filter ?? { kinds: [1], '#t': ['bench'] })
  const lat = new Float64Array(opts.subscribers * events.length)
  let nLat = 0
  const count = countDeliveries(subs, (_sub, id, atMs) => {
    const t = sentAt.get(id)
    if (t !== undefined && nLat < lat.length) lat[nLat++] = atMs - t
  })
  const pub = await connect(opts.publisherUrl ?? url, 15_000, opts.host)
  await opts.onStart?.()
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const published = await publishEvents(pub, events, frames, {
    window: opts.window ?? 200,
    ...(opts.ratePerSec ? { ratePerSec: opts.ratePerSec } : {}),
    onSend: (id) => sentAt.set(id, performance.now()),
  })
  // wait for the deliveries of every accepted event (or until they stop coming)
  const expectedDeliveries = published.accepted * opts.subscribers
  const incomplete = await awaitDeliveries(count, {
    expected: expectedDeliveries,
    subscribers: opts.subscribers,
    lastPublishMs: published.lastProgressMs,
    settleMs: (opts.settleSeconds ?? 10) * 1000,
  })
  const loadGenCores = cores(cpu0, t0)
  await opts.onEnd?.()
  const elapsedMs = count.deliveries > 0 ? count.lastDeliveryMs - t0 : 0
  closeAll([...subs, pub])
  return {
    subscribers: opts.subscribers,
    published: published.published,
    accepted: published.accepted,
    deliveries: count.deliveries,
    expectedDeliveries,
    deliveriesPerSec: perSecond(count.deliveries, elapsedMs),
    elapsedMs: Math.round(elapsedMs),
    delivery: latency(lat, nLat),
    loadGenCores,
    closedSubscribers: count.closed,
    rejected: published.rejected,
    ...(incomplete ? { incomplete } : {}),
  }
}
