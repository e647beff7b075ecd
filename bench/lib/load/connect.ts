// Client sockets for the load generators: connecting (optionally to a community's host), many at a time, and
// reading a refusal's reason prefix and adding up refusals counted by it.
import WebSocket from 'ws'
import { type BenchEvent, ingestEvents } from '../fixtures'

/**
 * `host`: a community's host name (the cluster scenarios bind one): sent as the Host header with the URL's port
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

export function closeAll(sockets: WebSocket[]): void {
  for (const ws of sockets) ws.terminate()
}

export function reasonPrefix(message: unknown): string {
  const s = typeof message === 'string' ? message : ''
  const i = s.indexOf(':')
  return i > 0 ? s.slice(0, i) : s || '(no reason)'
}

/** refusals counted by reason prefix, summed over several loads */
export function mergeCounts(counts: readonly Record<string, number>[]): Record<string, number> {
  const out: Record<string, number> = {}
  for (const c of counts) for (const [k, n] of Object.entries(c)) out[k] = (out[k] ?? 0) + n
  return out
}

export function resolveEvents(events: number | BenchEvent[]): BenchEvent[] {
  return typeof events === 'number' ? ingestEvents(events) : events
}
