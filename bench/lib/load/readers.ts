// Ingest beside readers: pipelined ingest into a relay that already stores the REQ data set, with or without
// `readers` connections running the heaviest indexed REQ shapes in a closed loop the whole time. A long read
// that holds the event loop shows in its delay and in the OK latency of every write behind it.
import type WebSocket from 'ws'
import { type BenchEvent, type Dataset, prng } from '../fixtures'
import { openMany } from './connect'
import { type IngestResult, ingestPipelined } from './ingest'
import { type Latency, latency } from './latency'
import { makeQueries } from './req'

export const READ_LOAD_VARIANTS = ['ingest + readers', 'ingest alone'] as const
export type ReadLoadVariant = (typeof READ_LOAD_VARIANTS)[number]

/**
 * authors+kinds and #t+kinds as the `req` scenario sends them (limit 20..60); `kinds limit 500`: the newest
 * 500 notes (the largest page the relay serves, limits.maxLimit); `multi-author`: a home feed, kind 1 by 20
 * authors (limit 20..60).
 */
export const READER_SHAPES = ['authors+kinds', '#t+kinds', 'kinds limit 500', 'multi-author'] as const
export type ReaderShape = (typeof READER_SHAPES)[number]

interface ReaderQuery {
  shape: ReaderShape
  filter: Record<string, unknown>
}

/** `count` filters, the READER_SHAPES in turn, deterministic. */
export function readerQueries(dataset: Dataset, count: number, seed = 11): ReaderQuery[] {
  const per = Math.ceil(count / READER_SHAPES.length)
  const byAuthor = makeQueries(dataset, 'authors+kinds', per, seed)
  const byTag = makeQueries(dataset, '#t+kinds', per, seed)
  const rand = prng(seed)
  const pickAuthors = (n: number) => Array.from({ length: n }, () => dataset.authors[Math.floor(rand() * dataset.authors.length)]!)
  const filterOf = (shape: ReaderShape, j: number): Record<string, unknown> => {
    switch (shape) {
      case 'authors+kinds':
        return byAuthor[j]!
      case '#t+kinds':
        return byTag[j]!
      case 'kinds limit 500':
        return { kinds: [1], limit: 500 }
      default:
        return { authors: [...new Set(pickAuthors(20))], kinds: [1], limit: 20 + Math.floor(rand() * 41) }
    }
  }
  return Array.from({ length: count }, (_, i) => {
    const shape = READER_SHAPES[i % READER_SHAPES.length]!
    return { shape, filter: filterOf(shape, Math.floor(i / READER_SHAPES.length)) }
  })
}

export interface ReadersFigures {
  connections: number
  /** REQs answered inside the timed window */
  queries: number
  queriesPerSec: number
  /** REQ → EOSE */
  latency: Latency
  byShape: Record<ReaderShape, Latency>
  meanEvents: number
  refused: number
}

export type ReadLoadResult = IngestResult & { variant: ReadLoadVariant; readers?: ReadersFigures }

export interface ReadLoadOptions {
  dataset: Dataset
  events: BenchEvent[]
  connections: number
  window: number
  maxSeconds: number
  readers: number
  onStart?: () => Promise<void> | void
  onEnd?: () => Promise<void> | void
}

export async function ingestWithReads(url: string, variant: ReadLoadVariant, opts: ReadLoadOptions): Promise<ReadLoadResult> {
  const readers = variant === 'ingest + readers' ? await startReaders(url, opts.readers, readerQueries(opts.dataset, 4_000)) : undefined
  let figures: ReadersFigures | undefined
  try {
    const r = await ingestPipelined(url, {
      events: opts.events,
      connections: opts.connections,
      window: opts.window,
      maxSeconds: opts.maxSeconds,
      onStart: async () => {
        await opts.onStart?.()
        readers?.begin()
      },
      onEnd: async () => {
        figures = readers?.end()
        await opts.onEnd?.()
      },
    })
    return { ...r, variant, ...(figures ? { readers: figures } : {}) }
  } finally {
    readers?.close()
  }
}

/**
 * `connections` sockets, each with one REQ in flight from now until `close()`, going round `queries`; every
 * subscription CLOSEd after its EOSE. Only REQs answered between `begin()` and `end()` are counted.
 */
async function startReaders(url: string, connections: number, queries: ReaderQuery[]) {
  const sockets = await openMany(url, connections)
  const samples: number[] = []
  const byShape = Object.fromEntries(READER_SHAPES.map((s) => [s, [] as number[]])) as Record<ReaderShape, number[]>
  let counting = false
  let events = 0
  let refused = 0
  let next = 0
  let t0 = 0
  let sub = 0
  const run = (ws: WebSocket) => {
    let subId = ''
    let sentAt = 0
    let received = 0
    let shape: ReaderShape = READER_SHAPES[0]
    const send = () => {
      const q = queries[next++ % queries.length]!
      subId = `r${++sub}`
      received = 0
      shape = q.shape
      sentAt = performance.now()
      ws.send(`["REQ","${subId}",${JSON.stringify(q.filter)}]`)
    }
    ws.on('message', (data) => {
      const s = data.toString()
      if (s.startsWith('["EVENT"')) {
        received++
        return
      }
      const eose = s.startsWith('["EOSE"')
      if (!eose && !s.startsWith('["CLOSED"')) return
      if ((JSON.parse(s) as string[])[1] !== subId) return
      if (counting) {
        const ms = performance.now() - sentAt
        samples.push(ms)
        byShape[shape].push(ms)
        events += received
        if (!eose) refused++
      }
      if (eose) ws.send(`["CLOSE","${subId}"]`)
      send()
    })
    send()
  }
  for (const ws of sockets) run(ws)
  return {
    begin() {
      counting = true
      t0 = performance.now()
    },
    end(): ReadersFigures {
      counting = false
      const ms = performance.now() - t0
      const n = samples.length
      return {
        connections,
        queries: n,
        queriesPerSec: ms > 0 ? Math.round((n * 1000) / ms) : 0,
        latency: latency(samples),
        byShape: Object.fromEntries(READER_SHAPES.map((s) => [s, latency(byShape[s])])) as Record<ReaderShape, Latency>,
        meanEvents: Math.round((events / Math.max(1, n)) * 100) / 100,
        refused,
      }
    },
    close() {
      for (const ws of sockets) ws.terminate()
    },
  }
}
