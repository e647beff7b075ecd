// Ingest load against any NIP-01 relay URL: each connection keeps a window of EVENTs in flight (1: a closed
// loop), or an open loop sends at a fixed rate whatever the OKs. Returns figures and asserts nothing; events
// are signed and serialized before the clock starts.

import type WebSocket from 'ws'
import type { BenchEvent } from '../fixtures'
import { closeAll, openEach, openMany, reasonPrefix, resolveEvents } from './connect'
import { cores, type Latency, latency, perSecond } from './latency'

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
  /** opens connection `i` (e.g. connected and NIP-42-authenticated as the authors), else plain connections */
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
          // in an open loop, a connection with nothing in flight when the schedule ends is done at once
          fillers.push(fill)
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
