// A reconnect storm: `connections` sockets opened at once, each sending one REQ the moment it is open (a
// client re-subscribing to its feed), timed REQ → EOSE; then, with every REQ still open, what the relay holds
// per connection. Refusals (CLOSED) are counted by reason prefix: a storm must be served, not turned away.
import WebSocket from 'ws'
import type { MemorySample } from '../relay-ipc'
import { closeAll, reasonPrefix } from './connect'
import { type Latency, latency } from './latency'

export interface ReqBurstResult {
  connections: number
  /** REQ → EOSE over the sockets that got one */
  eose: Latency
  served: number
  /** CLOSED instead of EOSE, by reason prefix */
  rejected: Record<string, number>
  /** sockets that failed to open, or got neither EOSE nor CLOSED in time */
  failed: number
  /** from the first connect to the last EOSE, ms */
  stormMs: number
  /** memory the relay holds per connection with its REQ open (heap + external after GC; RSS), bytes */
  heapPerConnection: number
  rssPerConnection: number
  incomplete?: string
}

interface Outcome {
  ws?: WebSocket
  ms?: number
  closed?: string
}

/** One socket: open, REQ at once, wait for EOSE or CLOSED (or give up at `timeoutMs`). */
function subscribeOnce(url: string, filter: Record<string, unknown>, timeoutMs: number): Promise<Outcome> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { perMessageDeflate: false, skipUTF8Validation: true, handshakeTimeout: timeoutMs })
    let sentAt = 0
    const timer = setTimeout(() => done({ ws }), timeoutMs)
    const done = (o: Outcome) => {
      clearTimeout(timer)
      ws.off('message', onMessage)
      resolve(o)
    }
    const onMessage = (data: WebSocket.RawData) => {
      const s = data.toString()
      if (s.startsWith('["EOSE","b"')) return done({ ws, ms: performance.now() - sentAt })
      if (s.startsWith('["CLOSED","b"')) done({ ws, closed: reasonPrefix((JSON.parse(s) as string[])[2]) })
    }
    ws.on('message', onMessage)
    ws.once('open', () => {
      sentAt = performance.now()
      ws.send(`["REQ","b",${JSON.stringify(filter)}]`)
    })
    ws.on('error', () => done({})) // before open: a failed socket; after: 'close' follows and the timer ends it
  })
}

export async function reqBurst(
  url: string,
  opts: { filters: Record<string, unknown>[]; timeoutMs?: number },
  measure: () => Promise<MemorySample>,
): Promise<ReqBurstResult> {
  const before = await measure()
  const t0 = performance.now()
  const outcomes = await Promise.all(opts.filters.map((f) => subscribeOnce(url, f, opts.timeoutMs ?? 30_000)))
  const stormMs = performance.now() - t0
  const sockets = outcomes.flatMap((o) => (o.ws ? [o.ws] : []))
  try {
    const after = await measure()
    const lat = outcomes.flatMap((o) => (o.ms === undefined ? [] : [o.ms]))
    const rejected: Record<string, number> = {}
    for (const o of outcomes) if (o.closed) rejected[o.closed] = (rejected[o.closed] ?? 0) + 1
    const open = sockets.filter((ws) => ws.readyState === WebSocket.OPEN).length
    const failed = outcomes.filter((o) => o.ms === undefined && o.closed === undefined).length
    const heap = (m: MemorySample) => m.heapUsed + m.external
    return {
      connections: opts.filters.length,
      eose: latency(lat),
      served: lat.length,
      rejected,
      failed,
      stormMs: Math.round(stormMs),
      heapPerConnection: Math.round((heap(after) - heap(before)) / Math.max(1, open)),
      rssPerConnection: Math.round((after.rss - before.rss) / Math.max(1, open)),
      ...(failed ? { incomplete: `${failed} sockets failed or were never answered` } : {}),
    }
  } finally {
    closeAll(sockets)
  }
}
