// The console's live stream (server-sent events): a snapshot at once, then one a second, from one timer per node
// that every open stream shares; the timer runs only while a stream is open. Bounded per session and per node,
// and a stream ends with `event: expired` when its session does.
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { ConsoleSnapshot } from '../../../protocols/console.js'
import { reason } from '../../../protocols/reasons.js'
import type { Logger } from '../../log.js'
import { CONSOLE_SECURITY_HEADERS, sendRefusal } from './console-http.js'

export interface StreamLimits {
  /** how often each stream gets a snapshot, ms */
  intervalMs: number
  /** streams one session may hold open (a few tabs) */
  maxPerSession: number
  /** streams this node serves at once */
  maxPerNode: number
}

// A view live to the second: a repeating timer runs late by whatever the event loop was doing, so it ticks every
// 900 ms and a busy moment of up to 100 ms still updates the page within a second. Four tabs per operator and 64
// per node bound what the snapshots cost (each is built from memory, but serialised per stream).
export const DEFAULT_STREAM_LIMITS: StreamLimits = { intervalMs: 900, maxPerSession: 4, maxPerNode: 64 }
// Proxies close a response silent for a minute or so; a snapshot a second already prevents that, and the comment
// every 15 s keeps a stream alive while its snapshots are held back for a slow reader.
const KEEPALIVE_EVERY_TICKS = 15
// A reader that has not taken this much of what was written is skipped until it catches up: the stream is
// live, so a skipped snapshot is replaced by the next one rather than queued.
const MAX_BUFFERED_BYTES = 1 << 20

export interface StreamOpen {
  /** the session's id in this node's table (its cookie's hash) */
  session: string
  expiresAtMs: number
  /** the reader's next snapshot; called at once, then every interval */
  next(nowMs: number): ConsoleSnapshot
}

interface Stream extends StreamOpen {
  res: ServerResponse
}

export interface StreamHub {
  open(req: IncomingMessage, res: ServerResponse, s: StreamOpen): void
  /** a session signed out: its streams end with `event: expired` */
  endSession(session: string): void
  readonly size: number
  close(): void
}

export function createStreamHub(limits: StreamLimits, nowMs: () => number, log: Logger): StreamHub {
  const streams = new Set<Stream>()
  let timer: NodeJS.Timeout | undefined
  let ticks = 0

  const end = (s: Stream, event?: 'expired') => {
    if (!streams.delete(s)) return
    if (event) s.res.write(`event: ${event}\ndata: {}\n\n`)
    s.res.end()
    if (streams.size === 0 && timer) {
      clearInterval(timer)
      timer = undefined
    }
  }

  const send = (s: Stream, now: number) => {
    if (now >= s.expiresAtMs) return end(s, 'expired')
    if (s.res.writableLength > MAX_BUFFERED_BYTES) return
    try {
      s.res.write(`event: snapshot\ndata: ${JSON.stringify(s.next(now))}\n\n`)
    } catch (error) {
      log.error({ err: error }, 'console: building a snapshot failed; ending the stream')
      end(s)
    }
  }

  const tick = () => {
    ticks++
    const now = nowMs()
    for (const s of [...streams]) {
      if (ticks % KEEPALIVE_EVERY_TICKS === 0) s.res.write(': keepalive\n\n')
      send(s, now)
    }
  }

  return {
    open(req, res, o) {
      if (streams.size >= limits.maxPerNode)
        return sendRefusal(res, 429, reason('rate-limited', 'this node serves as many console streams as it may'))
      let mine = 0
      for (const s of streams) if (s.session === o.session) mine++
      if (mine >= limits.maxPerSession)
        return sendRefusal(res, 429, reason('rate-limited', `at most ${limits.maxPerSession} console streams per sign-in`))
      const s: Stream = { ...o, res }
      streams.add(s)
      res.writeHead(200, {
        ...CONSOLE_SECURITY_HEADERS,
        'Content-Type': 'text/event-stream',
        'Cache-Control': 'no-store',
        // nginx buffers responses by default, which would hold snapshots back
        'X-Accel-Buffering': 'no',
      })
      res.write(': apiary console\n\n')
      req.on('close', () => end(s))
      if (timer === undefined) {
        timer = setInterval(tick, limits.intervalMs)
        timer.unref()
      }
      send(s, nowMs())
    },
    endSession(session) {
      for (const s of [...streams]) if (s.session === session) end(s, 'expired')
    },
    get size() {
      return streams.size
    },
    close() {
      for (const s of [...streams]) end(s)
    },
  }
}
