// REQ load: REQ → EOSE latency per filter shape, one query at a time and from several sockets at once.
import type WebSocket from 'ws'
import { type Dataset, prng, reqDataset } from '../fixtures'
import { closeAll, openMany } from './connect'
import { ingestPipelined } from './ingest'
import { type Latency, latency, perSecond, round2 } from './latency'

export const REQ_SHAPES = ['ids', 'authors', 'authors+kinds', '#e', '#p', '#t', 'kinds', 'kinds+until', '#t+kinds', 'since/until'] as const
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
  const notes = dataset.events.filter((e) => e.kind === 1)
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
      case '#e':
        // the reactions to one note
        return { '#e': [pick(notes).id], limit: limit() }
      case '#p':
        return { '#p': [pick(dataset.authors)], limit: limit() }
      case '#t':
        return { '#t': [pick(dataset.topics)], limit: limit() }
      case 'kinds':
        return { kinds: [rand() < 0.7 ? 1 : 7], limit: limit() }
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
  /** what `onConcurrent` returned for this shape (the req scenario: relay CPU in cores over the concurrent phase) */
  concurrentProbe?: number
}

/**
 * REQ → EOSE latency per filter shape. Sequential: one socket, one query at a time. Concurrent: `connections`
 * sockets, each closed-loop. Every subscription is CLOSEd after its EOSE.
 * Pass `dataset` when the relay already stores it (the req scenario pre-loads each relay once per run); pass `stored`
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
    /**
     * queries of every shape sent first, untimed: a relay that compiles its hot paths as it runs (a JIT) is
     * measured warm, as it runs after its first minutes, not in its first second
     */
    warmupQueries?: number
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
    if (opts.warmupQueries)
      for (const shape of opts.shapes ?? REQ_SHAPES) await runQueries(sockets, makeQueries(dataset, shape, opts.warmupQueries, 3))
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
