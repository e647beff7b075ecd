// Load generators against any NIP-01 relay URL. Each returns figures and asserts nothing. Events are signed
// (and serialized to frames) before any clock starts; see bench/fixtures.ts.
import WebSocket from 'ws'
import type { MemorySample } from './child'
import { type BenchEvent, type Dataset, ingestEvents, prng, reqDataset } from './fixtures'

// ---------------------------------------------------------------- helpers

export interface Latency {
  p50Ms: number
  p99Ms: number
  maxMs: number
}

/**
 * p50, p99 and max of the first `n` samples. A quantile is the nearest rank: the smallest sample with at least
 * q·n samples at or below it (of 300, the p99 is the 297th, the 4th largest). Until 2026-12-04 the index was
 * floor(q·n), one rank higher whenever q·n is whole (the 298th of 300).
 */
export function latency(samples: ArrayLike<number>, n = samples.length): Latency {
  if (n === 0) return { p50Ms: Number.NaN, p99Ms: Number.NaN, maxMs: Number.NaN }
  const sorted = Float64Array.from({ length: n }, (_, i) => samples[i]!).sort()
  const at = (q: number) => round2(sorted[Math.min(n - 1, Math.max(0, Math.ceil(q * n - 1e-9) - 1))]!)
  return { p50Ms: at(0.5), p99Ms: at(0.99), maxMs: round2(sorted[n - 1]!) }
}

const round2 = (x: number) => Math.round(x * 100) / 100

/** CPU this process used since `since` (a process.cpuUsage() reading taken at wall time `t0`), in cores */
function cores(since: NodeJS.CpuUsage, t0: number): number {
  const d = process.cpuUsage(since)
  return round2((d.user + d.system) / 1000 / Math.max(1, performance.now() - t0))
}
const perSecond = (count: number, ms: number) => (ms > 0 ? Math.round((count * 1000) / ms) : 0)

/**
 * `host`: a community's host name (bench/cluster.ts binds one): sent as the Host header with the URL's port
 * appended, as a client of `wss://<host>` behind a proxy would; without it the Host is the URL's (the relay's
 * default community).
 */
export function connect(url: string, timeoutMs = 15_000, host?: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, {
      perMessageDeflate: false,
      skipUTF8Validation: true,
      handshakeTimeout: timeoutMs,
      ...(host ? { headers: { host: `${host}:${new URL(url).port}` } } : {}),
    })
    ws.once('open', () => {
      ws.removeAllListeners('error')
      ws.on('error', () => {}) // a later socket error shows up as 'close'
      resolve(ws)
    })
    ws.once('error', reject)
    ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: HTTP ${res.statusCode}`)))
  })
}

/** Open `n` sockets, `parallel` handshakes at a time (a burst of thousands overflows accept queues). */
export function openMany(url: string, n: number, parallel = 50, host?: string): Promise<WebSocket[]> {
  return openEach(n, parallel, () => connect(url, 15_000, host))
}

/** Open `n` sockets through `open(i)` (e.g. connect and authenticate), `parallel` at a time. */
export async function openEach(n: number, parallel: number, open: (i: number) => Promise<WebSocket>): Promise<WebSocket[]> {
  const out: WebSocket[] = []
  for (let i = 0; i < n; i += parallel) {
    out.push(...(await Promise.all(Array.from({ length: Math.min(parallel, n - i) }, (_, j) => open(i + j)))))
  }
  return out
}

function closeAll(sockets: WebSocket[]): void {
  for (const ws of sockets) ws.terminate()
}

function reasonPrefix(message: unknown): string {
  const s = typeof message === 'string' ? message : ''
  const i = s.indexOf(':')
  return i > 0 ? s.slice(0, i) : s || '(no reason)'
}

function resolveEvents(events: number | BenchEvent[]): BenchEvent[] {
  return typeof events === 'number' ? ingestEvents(events) : events
}

// ---------------------------------------------------------------- ingest

export interface IngestResult {
  sent: number
  /** OK true, not a duplicate */
  accepted: number
  eventsPerSec: number
  elapsedMs: number
  /** outcome counts other than plain acceptance, by reason prefix ("duplicate", "rate-limited", "invalid", ...) */
  rejected: Record<string, number>
  okLatency: Latency
  /** CPU the load generator (this process) used while timing, in cores (1 = one core busy) */
  loadGenCores: number
  closedConnections: number
  /** set when the run ended on the stall watchdog or a closed socket with events still un-acked */
  incomplete?: string
}

export interface IngestOptions {
  events: number | BenchEvent[]
  connections: number
  /** stop sending after this long (slow relays); the rate counts what was acknowledged */
  maxSeconds?: number
  /** give up when no OK arrives for this long */
  stallSeconds?: number
  /** Host header name (port appended), to reach a community bound to that host */
  host?: string
  /** opens connection `i` (bench/cluster.ts: connected and NIP-42-authenticated as the authors), else plain connections */
  openConnection?: (i: number) => Promise<WebSocket>
  /**
   * open loop: send at this rate (events/s over all connections, round robin) whatever the OKs, instead of
   * keeping `window` in flight per connection; OK latency then measures the relay at that load
   */
  ratePerSec?: number
  /** awaited right before the first send / right after the last OK (event-loop delay sampling) */
  onStart?: () => Promise<void> | void
  onEnd?: () => Promise<void> | void
}

/** Pipelined: each connection keeps up to `window` EVENTs un-acknowledged (1: a closed loop). */
export function ingestPipelined(url: string, opts: IngestOptions & { window: number }): Promise<IngestResult> {
  return ingest(url, opts)
}

async function ingest(url: string, opts: IngestOptions & { window: number }): Promise<IngestResult> {
  const events = resolveEvents(opts.events)
  const frames = events.map((e) => `["EVENT",${JSON.stringify(e)}]`)
  const sockets = opts.openConnection
    ? await openEach(opts.connections, 50, opts.openConnection)
    : await openMany(url, opts.connections, 50, opts.host)
  const lat = new Float64Array(events.length)
  let nLat = 0
  let next = 0
  let accepted = 0
  let closedConnections = 0
  let incomplete: string | undefined
  const rejected: Record<string, number> = {}
  const maxMs = (opts.maxSeconds ?? Number.POSITIVE_INFINITY) * 1000
  const stallMs = (opts.stallSeconds ?? 30) * 1000
  await opts.onStart?.()
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  let lastOk = t0
  const finishers: (() => void)[] = []
  const watchdog = setInterval(() => {
    if (performance.now() - lastOk > stallMs) {
      incomplete = `no OK for ${stallMs / 1000} s`
      for (const f of finishers) f()
    }
  }, 500)
  const paced = opts.ratePerSec !== undefined && opts.ratePerSec > 0
  const senders: ((i: number) => void)[] = []
  const fillers: (() => void)[] = []
  let scheduleEnded = false
  let pacer: NodeJS.Timeout | undefined
  if (paced) {
    // every 2 ms, send what the schedule says is due by now, round robin over the connections
    const rate = opts.ratePerSec!
    pacer = setInterval(() => {
      const now = performance.now()
      const due = Math.min(frames.length, Math.floor(((now - t0) * rate) / 1000))
      while (next < due && now - t0 < maxMs) senders[next % senders.length]!(next++)
      if (next >= frames.length || now - t0 >= maxMs) {
        clearInterval(pacer)
        pacer = undefined
        scheduleEnded = true
        // each connection ends once its last OK is in
        for (const f of fillers) f()
      }
    }, 2)
  }
  await Promise.all(
    sockets.map(
      (ws) =>
        new Promise<void>((resolve) => {
          const inflight = new Map<string, number>()
          let done = false
          const finish = () => {
            if (done) return
            done = true
            ws.removeAllListeners('message')
            resolve()
          }
          finishers.push(finish)
          const send = (i: number) => {
            inflight.set(events[i]!.id, performance.now())
            ws.send(frames[i]!)
          }
          senders.push(send)
          const fill = (): void => {
            if (paced) {
              if (scheduleEnded && inflight.size === 0) finish()
              return
            }
            while (inflight.size < opts.window && next < frames.length && performance.now() - t0 < maxMs) send(next++)
            if (inflight.size === 0) finish()
          }
          ws.on('message', (data) => {
            const s = data.toString()
            if (!s.startsWith('["OK"')) return
            const m = JSON.parse(s) as [string, string, boolean, string?]
            const sentAt = inflight.get(m[1])
            if (sentAt === undefined) return
            inflight.delete(m[1])
            lastOk = performance.now()
            lat[nLat++] = lastOk - sentAt
            if (m[2] === true && !String(m[3] ?? '').startsWith('duplicate:')) accepted++
            else {
              const p = reasonPrefix(m[3])
              rejected[p] = (rejected[p] ?? 0) + 1
            }
            fill()
          })
          ws.once('close', () => {
            closedConnections++
            if (inflight.size > 0) incomplete = `a connection closed with ${inflight.size} un-acked events`
            finish()
          })
          fill()
        }),
    ),
  )
  clearInterval(watchdog)
  if (pacer) clearInterval(pacer)
  const loadGenCores = cores(cpu0, t0)
  await opts.onEnd?.()
  const elapsedMs = lastOk - t0
  closeAll(sockets)
  return {
    sent: next,
    accepted,
    eventsPerSec: perSecond(accepted, elapsedMs),
    elapsedMs: Math.round(elapsedMs),
    rejected,
    okLatency: latency(lat, nLat),
    loadGenCores,
    closedConnections,
    ...(incomplete ? { incomplete } : {}),
  }
}

// ---------------------------------------------------------------- fan-out

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
    settleSeconds?: number
    /** Host header name (port appended), to reach a community bound to that host */
    host?: string
    /** publish through another relay than the subscribers' (cluster: publisher on node A, subscribers on B) */
    publisherUrl?: string
    /** the subscribers' REQ filter; it must match every event */
    filter?: Record<string, unknown>
    /** opens subscriber `i` (bench/channel-fanout.ts: connected and authenticated as its own key) */
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
      resolve()
    }
    const stall = setInterval(() => {
      if (performance.now() - lastProgress > 30_000) end()
    }, 500)
    const fill = () => {
      while (inflight < window && next < frames.length) {
        const i = next++
        inflight++
        sentAt.set(events[i]!.id, performance.now())
        pub.send(frames[i]!)
      }
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

// ---------------------------------------------------------------- REQ latency

export const REQ_SHAPES = ['ids', 'authors', 'authors+kinds', 'kinds+until', '#p', '#t+kinds', 'since/until'] as const
export type ReqShape = (typeof REQ_SHAPES)[number]

/**
 * Deterministic query list for one shape. `limit` is drawn from 20..60 (and the kinds query pages with a random
 * `until`) so that repeated queries are distinct filters: the baseline caches identical filters for 1 s, and a
 * random query mix that repeats exact filters would measure that cache instead of the store.
 */
export function makeQueries(dataset: Dataset, shape: ReqShape, count: number, seed = 7): Record<string, unknown>[] {
  const rand = prng(seed * 1_000 + REQ_SHAPES.indexOf(shape))
  const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)]!
  const limit = () => 20 + Math.floor(rand() * 41)
  const time = () => dataset.since + Math.floor(rand() * (dataset.until - dataset.since))
  return Array.from({ length: count }, (): Record<string, unknown> => {
    switch (shape) {
      case 'ids':
        return { ids: [pick(dataset.events).id] }
      case 'authors':
        return { authors: [pick(dataset.authors)], limit: limit() }
      case 'authors+kinds':
        return { authors: [pick(dataset.authors)], kinds: [rand() < 0.7 ? 1 : 7], limit: limit() }
      case 'kinds+until':
        return { kinds: [rand() < 0.7 ? 1 : 7], until: time(), limit: limit() }
      case '#p':
        return { '#p': [pick(dataset.authors)], limit: limit() }
      case '#t+kinds':
        return { '#t': [pick(dataset.topics)], kinds: [1], limit: limit() }
      default: {
        // 'since/until'
        const since = time()
        return { since, until: since + 3_600, limit: limit() }
      }
    }
  })
}

export interface ReqRun {
  queries: number
  queriesPerSec: number
  latency: Latency
  meanEvents: number
  refused: number
}

export interface ReqShapeResult {
  shape: ReqShape
  sequential: ReqRun
  concurrent: ReqRun & { connections: number }
  /** what `onConcurrent` returned for this shape (bench/run.ts: relay CPU in cores over the concurrent phase) */
  concurrentProbe?: number
}

/**
 * REQ → EOSE latency per filter shape. Sequential: one socket, one query at a time. Concurrent: `connections`
 * sockets, each closed-loop. Every subscription is CLOSEd after its EOSE.
 * Pass `dataset` when the relay already stores it (bench/run.ts pre-loads each relay once per run); pass `stored`
 * instead to build the data set and load it over the wire first (pipelined ingest), then measure.
 */
export async function reqLatency(
  url: string,
  opts: {
    dataset?: Dataset
    stored?: number
    queries: number
    concurrentQueries?: number
    connections?: number
    shapes?: readonly ReqShape[]
    /** called before each shape's concurrent phase; the function it returns is awaited after it */
    onConcurrent?: () => Promise<() => Promise<number>>
  },
): Promise<ReqShapeResult[]> {
  let dataset = opts.dataset
  if (!dataset) {
    dataset = reqDataset(opts.stored ?? 100_000)
    await ingestPipelined(url, { events: dataset.events, connections: 4, window: 200 })
  }
  const connections = opts.connections ?? 8
  const sockets = await openMany(url, connections)
  const out: ReqShapeResult[] = []
  try {
    // warm-up: page cache, JIT, prepared statements
    await runQueries(sockets.slice(0, 1), makeQueries(dataset, 'authors', 20, 99))
    for (const shape of opts.shapes ?? REQ_SHAPES) {
      const sequential = await runQueries(sockets.slice(0, 1), makeQueries(dataset, shape, opts.queries, 1))
      const queries = makeQueries(dataset, shape, opts.concurrentQueries ?? opts.queries * 4, 2)
      const end = await opts.onConcurrent?.()
      const concurrent = await runQueries(sockets, queries)
      const concurrentProbe = await end?.()
      out.push({
        shape,
        sequential,
        concurrent: { ...concurrent, connections },
        ...(concurrentProbe === undefined ? {} : { concurrentProbe }),
      })
    }
  } finally {
    closeAll(sockets)
  }
  return out
}

let subCounter = 0

async function runQueries(sockets: WebSocket[], filters: Record<string, unknown>[]): Promise<ReqRun> {
  const lat = new Float64Array(filters.length)
  let n = 0
  let events = 0
  let refused = 0
  let next = 0
  const t0 = performance.now()
  await Promise.all(
    sockets.map(
      (ws) =>
        new Promise<void>((resolve, reject) => {
          let subId = ''
          let sentAt = 0
          const send = () => {
            if (next >= filters.length) {
              ws.off('message', onMessage)
              ws.off('close', onClose)
              return resolve()
            }
            subId = `q${++subCounter}`
            sentAt = performance.now()
            ws.send(`["REQ","${subId}",${JSON.stringify(filters[next++])}]`)
          }
          const onMessage = (data: WebSocket.RawData) => {
            const s = data.toString()
            if (s.startsWith('["EVENT"')) {
              events++
              return
            }
            const eose = s.startsWith('["EOSE"')
            if (!eose && !s.startsWith('["CLOSED"')) return
            const m = JSON.parse(s) as string[]
            if (m[1] !== subId) return
            lat[n++] = performance.now() - sentAt
            if (eose) ws.send(`["CLOSE","${subId}"]`)
            else refused++
            send()
          }
          const onClose = () => reject(new Error('relay closed the query connection'))
          ws.on('message', onMessage)
          ws.once('close', onClose)
          send()
        }),
    ),
  )
  const elapsed = performance.now() - t0
  return {
    queries: n,
    queriesPerSec: perSecond(n, elapsed),
    latency: latency(lat, n),
    meanEvents: round2(events / Math.max(1, n)),
    refused,
  }
}

// ---------------------------------------------------------------- idle connections

export interface IdleMemoryResult {
  connections: number
  /** (heapUsed + external) delta per connection, bytes, after forced GC in the relay process */
  heapPerConnection: number
  /** rss delta per connection, bytes */
  rssPerConnection: number
  /** sockets on which the relay sent something (e.g. the NIP-42 AUTH challenge) before we measured */
  greeted: number
  before: MemorySample
  after: MemorySample
}

/**
 * Open `connections` sockets that never send anything: complete the upgrade, wait for the relay's first frame
 * (Apiary sends an AUTH challenge; the baseline sends nothing, so give up after 300 ms), then measure.
 * `measure` reads the relay process's memory after GC (bench/child.ts answers it over IPC).
 */
export async function idleConnectionMemory(
  url: string,
  opts: { connections: number },
  measure: () => Promise<MemorySample> | MemorySample,
): Promise<IdleMemoryResult> {
  // one throwaway connection first, so lazily created per-server structures are not charged to the sample
  const warm = await connect(url)
  await new Promise((r) => setTimeout(r, 300))
  warm.close()
  await new Promise((r) => setTimeout(r, 300))
  const before = await measure()
  let greeted = 0
  const sockets: WebSocket[] = []
  // The listener goes on before the upgrade completes: a greeting can arrive in the same read as the 101.
  const openIdle = () =>
    new Promise<WebSocket>((resolve, reject) => {
      const ws = new WebSocket(url, { perMessageDeflate: false, skipUTF8Validation: true })
      let timer: NodeJS.Timeout | undefined
      ws.once('message', () => {
        greeted++
        clearTimeout(timer)
        resolve(ws)
      })
      ws.once('open', () => {
        timer = setTimeout(() => resolve(ws), 300)
      })
      ws.on('error', reject) // after resolve: a no-op that keeps a late socket error from going unhandled
    })
  for (let i = 0; i < opts.connections; i += 100) {
    sockets.push(...(await Promise.all(Array.from({ length: Math.min(100, opts.connections - i) }, openIdle))))
  }
  await new Promise((r) => setTimeout(r, 1_000))
  const after = await measure()
  const open = sockets.filter((ws) => ws.readyState === WebSocket.OPEN).length
  closeAll(sockets)
  const heap = (m: MemorySample) => m.heapUsed + m.external
  return {
    connections: open,
    heapPerConnection: Math.round((heap(after) - heap(before)) / Math.max(1, open)),
    rssPerConnection: Math.round((after.rss - before.rss) / Math.max(1, open)),
    greeted,
    before,
    after,
  }
}
