// Ingest into several relay URLs at once (a cluster's nodes): one pipelined load per URL, each with its own
// slice of the events, started together once every load has its connections open, and timed as one window
// from that start to the last OK of any of them.
import { mergeCounts } from './connect'
import type { IngestOptions } from './ingest'
import { type IngestResult, ingestPipelined } from './ingest'

export interface NodesIngestResult {
  accepted: number
  /** accepted by every node / the window from the common start to the last OK anywhere */
  eventsPerSec: number
  elapsedMs: number
  rejected: Record<string, number>
  incomplete?: string
  /** each URL's own load, in the order given */
  perNode: IngestResult[]
}

export interface NodesIngestOptions extends Omit<IngestOptions, 'events' | 'openConnection' | 'ratePerSec'> {
  urls: readonly string[]
  /** one slice per URL */
  slices: readonly IngestOptions['events'][]
  window: number
}

/**
 * `parties` callers wait for each other; the last to arrive runs `once`, then all go on (a failure of `once`
 * fails them all).
 */
function barrier(parties: number, once?: () => Promise<void> | void): () => Promise<void> {
  let arrived = 0
  let release: () => void = () => {}
  let fail: (e: unknown) => void = () => {}
  const open = new Promise<void>((resolve, reject) => {
    release = resolve
    fail = reject
  })
  return () => {
    arrived++
    if (arrived === parties) Promise.resolve().then(once).then(release, fail)
    return open
  }
}

export async function ingestOverNodes(opts: NodesIngestOptions): Promise<NodesIngestResult> {
  const { urls, slices, onStart, onEnd, ...shape } = opts
  // onStart runs once every load is connected, so no node starts ahead; onEnd once the last load is done
  const started = barrier(urls.length, onStart)
  const ended = barrier(urls.length, onEnd)
  const perNode = await Promise.all(
    urls.map((url, i) => ingestPipelined(url, { ...shape, events: slices[i] ?? [], onStart: started, onEnd: ended })),
  )
  const accepted = perNode.reduce((n, r) => n + r.accepted, 0)
  const elapsedMs = Math.max(...perNode.map((r) => r.elapsedMs))
  const incomplete = perNode.flatMap((r, i) => (r.incomplete ? [`node ${i + 1}: ${r.incomplete}`] : [])).join('; ')
  return {
    accepted,
    eventsPerSec: elapsedMs > 0 ? Math.round((accepted * 1000) / elapsedMs) : 0,
    elapsedMs,
    rejected: mergeCounts(perNode.map((r) => r.rejected)),
    ...(incomplete ? { incomplete } : {}),
    perNode,
  }
}
