// Fan-out load: subscribers on an empty relay, one publisher, deliveries counted and timed per event id.
import type WebSocket from 'ws'
import type { BenchEvent } from '../fixtures'
import { closeAll, connect, openEach, openMany, reasonPrefix, resolveEvents } from './connect'
import { cores, type Latency, latency, perSecond } from './latency'

export interface FanoutResult {
  subscribers: number
  published: number
  accepted: number
  deliveries: number
  expectedDeliveries: number
  deliveriesPerSec: number
  elapsedMs: number
  delivery: Latency
  /** CPU the load generator used from first publish to last delivery, in cores */
  loadGenCores: number
  /** subscribers the relay closed during the run (e.g. as slow consumers) */
  closedSubscribers: number
  rejected: Record<string, number>
  incomplete?: string
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
  const frames = events.map((e) => `["EVENT",${JSON.stringify(e)}]`)
  const sentAt = new Map<string, number>()
  const subs = opts.openSubscriber
    ? await openEach(opts.subscribers, 50, opts.openSubscriber)
    : await openMany(url, opts.subscribers, 50, opts.host)
  const filter = opts.filter ?? { kinds: [1], '#t': ['bench'] }
  const expectedPerSub = events.length
  const lat = new Float64Array(opts.subscribers * expectedPerSub)
  let nLat = 0
  let deliveries = 0
  let closedSubscribers = 0
  let lastDelivery = 0
  await Promise.all(
    subs.map(
      (ws, i) =>
        new Promise<void>((resolve, reject) => {
          const subId = `fan${i}`
          const onEose = (data: WebSocket.RawData) => {
            const s = data.toString()
            if (s.startsWith('["EOSE"')) {
              ws.off('message', onEose)
              resolve()
            } else if (s.startsWith('["CLOSED"')) reject(new Error(`subscription refused: ${s}`))
          }
          ws.on('message', onEose)
          ws.send(JSON.stringify(['REQ', subId, filter]))
        }),
    ),
  )
  for (const ws of subs) {
    ws.on('message', (data) => {
      const s = data.toString()
      if (!s.startsWith('["EVENT"')) return
      const k = s.indexOf('"id":"')
      const t = sentAt.get(s.slice(k + 6, k + 70))
      lastDelivery = performance.now()
      deliveries++
      if (t !== undefined && nLat < lat.length) lat[nLat++] = lastDelivery - t
    })
    ws.once('close', () => closedSubscribers++)
  }
  const pub = await connect(opts.publisherUrl ?? url, 15_000, opts.host)
  const window = opts.window ?? 200
  let next = 0
  let acked = 0
  let accepted = 0
  const rejected: Record<string, number> = {}
  await opts.onStart?.()
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  let lastProgress = t0
  await new Promise<void>((resolve) => {
    let inflight = 0
    const end = () => {
      clearInterval(stall)
      clearInterval(pace)
      resolve()
    }
    const stall = setInterval(() => {
      if (performance.now() - lastProgress > 30_000) end()
    }, 500)
    const send = () => {
      const i = next++
      inflight++
      sentAt.set(events[i]!.id, performance.now())
      pub.send(frames[i]!)
    }
    // open loop: every 5 ms, what the rate says is due by now
    const pace = opts.ratePerSec
      ? setInterval(() => {
          const due = Math.min(frames.length, Math.floor(((performance.now() - t0) * opts.ratePerSec!) / 1000))
          while (next < due) send()
          if (next === frames.length) clearInterval(pace)
        }, 5)
      : undefined
    const fill = () => {
      if (pace) {
        if (acked === frames.length) end()
        return
      }
      while (inflight < window && next < frames.length) send()
      if (acked === frames.length) end()
    }
    pub.on('message', (data) => {
      const s = data.toString()
      if (!s.startsWith('["OK"')) return
      const m = JSON.parse(s) as [string, string, boolean, string?]
      inflight--
      acked++
      lastProgress = performance.now()
      if (m[2] === true && !String(m[3] ?? '').startsWith('duplicate:')) accepted++
      else {
        const p = reasonPrefix(m[3])
        rejected[p] = (rejected[p] ?? 0) + 1
      }
      fill()
    })
    pub.once('close', end)
    fill()
  })
  // wait for the deliveries of every accepted event (or until they stop coming)
  const expectedDeliveries = accepted * opts.subscribers
  const settleMs = (opts.settleSeconds ?? 10) * 1000
  let incomplete: string | undefined
  await new Promise<void>((resolve) => {
    const check = setInterval(() => {
      const quiet = performance.now() - Math.max(lastDelivery, lastProgress)
      if (deliveries >= expectedDeliveries || quiet > settleMs || closedSubscribers === opts.subscribers) {
        clearInterval(check)
        if (deliveries < expectedDeliveries) incomplete = `${expectedDeliveries - deliveries} deliveries missing`
        resolve()
      }
    }, 20)
  })
  const loadGenCores = cores(cpu0, t0)
  await opts.onEnd?.()
  const elapsedMs = deliveries > 0 ? lastDelivery - t0 : 0
  closeAll([...subs, pub])
  return {
    subscribers: opts.subscribers,
    published: next,
    accepted,
    deliveries,
    expectedDeliveries,
    deliveriesPerSec: perSecond(deliveries, elapsedMs),
    elapsedMs: Math.round(elapsedMs),
    delivery: latency(lat, nLat),
    loadGenCores,
    closedSubscribers,
    rejected,
    ...(incomplete ? { incomplete } : {}),
  }
}
