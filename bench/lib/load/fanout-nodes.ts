// Fan-out over several relay URLs (a cluster's nodes): subscribers spread over the nodes, one open-loop
// publisher per entry of `publisherUrls`, each with its own share of the events, all at once. A delivery is
// timed against its publish and counted as crossing nodes when the subscriber's node is not the publisher's.
import type WebSocket from 'ws'
import type { BenchEvent } from '../fixtures'
import { closeAll, connect, mergeCounts, openMany } from './connect'
import type { FanoutCounts } from './fanout'
import { cores, type Latency, latency, perSecond } from './latency'
import { eventFrames, type PublishResult, publishEvents } from './publisher'
import { awaitDeliveries, countDeliveries, subscribeEach } from './subscribers'

export interface NodesFanoutResult extends FanoutCounts {
  /** deliveries to a subscriber on another node than the event's publisher */
  crossNode: Latency
  /** deliveries to a subscriber on the publisher's node */
  sameNode: Latency
  /** per subscriber URL, in the order given: deliveries its subscribers received */
  deliveriesByNode: number[]
  /** per publisher, in the order given: what it published and what was accepted */
  publishers: Pick<PublishResult, 'published' | 'accepted'>[]
}

export interface NodesFanoutOptions {
  /** `subscribersPerUrl` subscribers on each */
  subscriberUrls: readonly string[]
  subscribersPerUrl: number
  /** one publisher on each entry (an URL may repeat: several publishers on one node) */
  publisherUrls: readonly string[]
  /** one slice per publisher, published at `ratePerSecEach` */
  events: readonly (readonly BenchEvent[])[]
  ratePerSecEach: number
  /** Host header name (port appended), to reach a community bound to that host */
  host?: string
  settleSeconds?: number
  onStart?: () => Promise<void> | void
  onEnd?: () => Promise<void> | void
}

export async function fanoutOverNodes(opts: NodesFanoutOptions): Promise<NodesFanoutResult> {
  const frames = opts.events.map(eventFrames)
  const totalEvents = opts.events.reduce((n, e) => n + e.length, 0)
  const subscribers = opts.subscriberUrls.length * opts.subscribersPerUrl
  const sentAt = new Map<string, { atMs: number; url: string }>()
  const subs: WebSocket[] = []
  for (const url of opts.subscriberUrls) subs.push(...(await openMany(url, opts.subscribersPerUrl, 50, opts.host)))
  const urlOf = (sub: number) => opts.subscriberUrls[Math.floor(sub / opts.subscribersPerUrl)]!
  await subscribeEach(subs, { kinds: [1], '#t': ['bench'] })
  const cross = new Float64Array(subscribers * totalEvents)
  const same = new Float64Array(subscribers * totalEvents)
  let nCross = 0
  let nSame = 0
  const deliveriesByNode = opts.subscriberUrls.map(() => 0)
  const count = countDeliveries(subs, (sub, id, atMs) => {
    deliveriesByNode[Math.floor(sub / opts.subscribersPerUrl)]!++
    const sent = sentAt.get(id)
    if (!sent) return
    if (sent.url === urlOf(sub)) {
      if (nSame < same.length) same[nSame++] = atMs - sent.atMs
    } else if (nCross < cross.length) cross[nCross++] = atMs - sent.atMs
  })
  const pubs = await Promise.all(opts.publisherUrls.map((url) => connect(url, 15_000, opts.host)))
  await opts.onStart?.()
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const published = await Promise.all(
    pubs.map((pub, p) =>
      publishEvents(pub, opts.events[p] ?? [], frames[p] ?? [], {
        window: 1,
        ratePerSec: opts.ratePerSecEach,
        onSend: (id) => sentAt.set(id, { atMs: performance.now(), url: opts.publisherUrls[p]! }),
      }),
    ),
  )
  const accepted = published.reduce((n, r) => n + r.accepted, 0)
  const expectedDeliveries = accepted * subscribers
  const incomplete = await awaitDeliveries(count, {
    expected: expectedDeliveries,
    subscribers,
    lastPublishMs: Math.max(...published.map((r) => r.lastProgressMs)),
    settleMs: (opts.settleSeconds ?? 10) * 1000,
  })
  const loadGenCores = cores(cpu0, t0)
  await opts.onEnd?.()
  const elapsedMs = count.deliveries > 0 ? count.lastDeliveryMs - t0 : 0
  closeAll([...subs, ...pubs])
  return {
    subscribers,
    published: published.reduce((n, r) => n + r.published, 0),
    accepted,
    deliveries: count.deliveries,
    expectedDeliveries,
    deliveriesPerSec: perSecond(count.deliveries, elapsedMs),
    elapsedMs: Math.round(elapsedMs),
    crossNode: latency(cross, nCross),
    sameNode: latency(same, nSame),
    deliveriesByNode,
    publishers: published.map(({ published, accepted }) => ({ published, accepted })),
    loadGenCores,
    closedSubscribers: count.closed,
    rejected: mergeCounts(published.map((r) => r.rejected)),
    ...(incomplete ? { incomplete } : {}),
  }
}
