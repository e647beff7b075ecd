// `slow-read` (Apiary only): does one slow read hold up the writes of its community? The relay child runs with
// BENCH_SLOW_READ_MS, so its SQLite store delays every query marked `#t: ["bench-slow"]` (bench/slow-read-store.ts).
// Both variants ingest the same events pipelined into the default community and differ only in a reader:
// - without slow REQ: nothing else on the relay;
// - with slow REQ: one more connection keeps exactly one marked REQ in flight the whole time (on its EOSE it
//   CLOSEs and sends the next), from before the clock starts until the last OK.
// The figure is OK latency p99 with the slow REQ ÷ without: a community that awaits each read before its next
// message answers every write queued behind one only after the read's delay.
import type WebSocket from 'ws'
import { type BenchEvent, ingestEvents } from './fixtures'
import { connect, type IngestResult, ingestPipelined, type Latency, latency } from './load'
import { SLOW_READ_TAG } from './slow-read-store'

export const SLOW_READ_VARIANTS = ['without slow REQ', 'with slow REQ'] as const
export type SlowReadVariant = (typeof SLOW_READ_VARIANTS)[number]

export type SlowReadResult = IngestResult & {
  variant: SlowReadVariant
  /** marked REQs answered (EOSE or CLOSED) while the ingest ran; 0 without the slow REQ */
  slowReqs: number
  /** REQ → EOSE of the marked REQs: at least the store's delay when the fake works */
  slowReqLatency: Latency
}

export interface SlowReadOptions {
  events: number | BenchEvent[]
  connections: number
  window: number
  maxSeconds: number
  onStart?: () => Promise<void> | void
  onEnd?: () => Promise<void> | void
}

export async function slowReadIngest(url: string, variant: SlowReadVariant, opts: SlowReadOptions): Promise<SlowReadResult> {
  const events = typeof opts.events === 'number' ? ingestEvents(opts.events) : opts.events
  const reader = variant === 'with slow REQ' ? await startSlowReader(url) : undefined
  try {
    const r = await ingestPipelined(url, { ...opts, events })
    const slow = reader?.stop() ?? { answered: 0, latency: latency([]) }
    return { ...r, variant, slowReqs: slow.answered, slowReqLatency: slow.latency }
  } finally {
    reader?.ws.terminate()
  }
}

/** One connection that always has one marked REQ waiting for its EOSE. */
async function startSlowReader(url: string): Promise<{ ws: WebSocket; stop(): { answered: number; latency: Latency } }> {
  const ws = await connect(url)
  const samples: number[] = []
  let stopped = false
  let subId = ''
  let sentAt = 0
  let n = 0
  const send = () => {
    subId = `slow${++n}`
    sentAt = performance.now()
    ws.send(JSON.stringify(['REQ', subId, { kinds: [1], '#t': [SLOW_READ_TAG], limit: 10 }]))
  }
  ws.on('message', (data) => {
    const m = JSON.parse(data.toString()) as unknown[]
    if ((m[0] !== 'EOSE' && m[0] !== 'CLOSED') || m[1] !== subId || stopped) return
    samples.push(performance.now() - sentAt)
    if (m[0] === 'EOSE') ws.send(JSON.stringify(['CLOSE', subId]))
    send()
  })
  send()
  return {
    ws,
    stop() {
      stopped = true
      return { answered: samples.length, latency: latency(samples) }
    },
  }
}
