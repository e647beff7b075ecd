// A console viewer without a browser, for the console scenario: it signs in to a relay child's console with the
// one-time link `apiary console login` would print (signed with the relay key of the child's data dir) and
// holds one stream open on one view, timing the snapshots as the page would receive them. A plain HTTP client
// parsing server-sent events, so a browser's own rendering never counts in the relay's figures.
import { readFileSync } from 'node:fs'
import { type IncomingMessage, request } from 'node:http'
import { join } from 'node:path'
import { consoleLoginLink, toSigningKey } from '../internal'
import { latency } from './load/latency'

export interface StreamFigures {
  /** snapshots received after the first (which is sent at once on opening) */
  snapshots: number
  /** the time between consecutive snapshots: the page's update interval */
  intervalsMs: number[]
  /** the same by the relay's clock (each snapshot's `atMs`): without this process's own delays */
  relayIntervalsMs: number[]
  /** the data of each snapshot after the first, bytes */
  bytes: number[]
  /** the first snapshot carries the charts' whole 10 minutes */
  firstBytes: number
  /** `agents.total` of the last snapshot (0 outside the agents view) */
  agentsTotal: number
}

export interface OpenStream {
  /** resolves with the first snapshot, so a measured window starts on a stream already serving */
  readonly ready: Promise<void>
  close(): StreamFigures
}

// the stream sends its first snapshot at once; a relay that has not within this is not serving the console
const FIRST_SNAPSHOT_TIMEOUT_MS = 10_000

/** `ws://host:port` → `http://host:port`, the origin the console answers on and the link is signed for */
export const httpOriginOf = (relayUrl: string) => new URL(relayUrl.replace(/^ws/, 'http')).origin

/** Signs in with the relay key of `dataDir`; resolves with the session cookie (`apiary_console=...`). */
export async function signIn(origin: string, dataDir: string): Promise<string> {
  const hex = readFileSync(join(dataDir, 'relay.key'), 'utf8').trim()
  const link = consoleLoginLink(origin, toSigningKey(Uint8Array.from(Buffer.from(hex, 'hex'))), Math.floor(Date.now() / 1000))
  const token = link.split('#login=')[1]
  const body = JSON.stringify({ token })
  const res = await send(`${origin}/console/api/session`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
    body,
  })
  const text = await readAll(res)
  if (res.statusCode !== 200) throw new Error(`console sign-in refused (${res.statusCode}): ${text.slice(0, 200)}`)
  const cookie = [res.headers['set-cookie'] ?? []].flat()[0]?.split(';')[0]
  if (!cookie) throw new Error('console sign-in set no cookie')
  return cookie
}

/** Opens `GET /console/api/stream?view=<view>` with the page's default query (the first 100 agent rows). */
export async function openStream(origin: string, cookie: string, view: string): Promise<OpenStream> {
  const res = await send(`${origin}/console/api/stream?view=${view}`, { method: 'GET', headers: { Cookie: cookie } })
  if (res.statusCode !== 200) throw new Error(`console stream refused (${res.statusCode}): ${(await readAll(res)).slice(0, 200)}`)
  const figures: StreamFigures = { snapshots: 0, intervalsMs: [], relayIntervalsMs: [], bytes: [], firstBytes: 0, agentsTotal: 0 }
  let lastAt: number | undefined
  let lastRelayAtMs = 0
  let buffered = ''
  let markReady: () => void = () => {}
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no console snapshot within ${FIRST_SNAPSHOT_TIMEOUT_MS} ms`)),
      FIRST_SNAPSHOT_TIMEOUT_MS,
    )
    markReady = () => {
      clearTimeout(timer)
      resolve()
    }
  })
  const onSnapshot = (data: string) => {
    const now = performance.now()
    const bytes = Buffer.byteLength(data)
    const snapshot = JSON.parse(data) as { atMs: number; agents?: { total: number } }
    if (lastAt === undefined) figures.firstBytes = bytes
    else {
      figures.snapshots++
      figures.intervalsMs.push(now - lastAt)
      figures.relayIntervalsMs.push(snapshot.atMs - lastRelayAtMs)
      figures.bytes.push(bytes)
    }
    lastAt = now
    lastRelayAtMs = snapshot.atMs
    figures.agentsTotal = snapshot.agents?.total ?? 0
    markReady()
  }
  res.setEncoding('utf8')
  res.on('data', (chunk: string) => {
    buffered += chunk
    let end = buffered.indexOf('\n\n')
    while (end >= 0) {
      const data = snapshotData(buffered.slice(0, end))
      if (data !== undefined) onSnapshot(data)
      buffered = buffered.slice(end + 2)
      end = buffered.indexOf('\n\n')
    }
  })
  return {
    ready,
    close() {
      res.destroy()
      return figures
    },
  }
}

/** The data of one server-sent event block if it is a `snapshot` (comments and other events: undefined). */
function snapshotData(block: string): string | undefined {
  const lines = block.split('\n')
  if (!lines.includes('event: snapshot')) return undefined
  return lines
    .filter((l) => l.startsWith('data: '))
    .map((l) => l.slice('data: '.length))
    .join('\n')
}

/** Over the streams of several windows: the update interval's percentiles and the snapshots' size. */
export function mergeStreams(streams: StreamFigures[]) {
  return {
    interval: latency(streams.flatMap((s) => s.intervalsMs)),
    relayInterval: latency(streams.flatMap((s) => s.relayIntervalsMs)),
    // latency() takes the nearest-rank quantiles of any samples
    bytesP50: latency(streams.flatMap((s) => s.bytes)).p50Ms,
    firstBytes: Math.max(0, ...streams.map((s) => s.firstBytes)),
    snapshots: streams.reduce((n, s) => n + s.snapshots, 0),
  }
}

function send(url: string, o: { method: string; headers: Record<string, string | number>; body?: string }): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: o.method, headers: o.headers }, resolve)
    req.on('error', reject)
    req.end(o.body)
  })
}

function readAll(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = ''
    res.setEncoding('utf8')
    res.on('data', (c: string) => {
      text += c
    })
    res.on('end', () => resolve(text))
    res.on('error', reject)
  })
}
