// The jobs load (docs/jobs.md): agents that AUTH, announce a capability, heartbeat and answer every job they are
// given with `processing` then a result; requesters that keep a window of jobs in flight and count results.
// `dispatch` asks the relay to hand each job to one agent; `broadcast` is plain NIP-90, every agent hears every
// request and does it (the work a broadcast duplicates is counted). Events are signed with libsecp256k1's native
// addon (bcrypto) so the load generator's signing does not bound what is measured.
import { createHash, randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import WebSocket from 'ws'
import { type BenchEvent, benchKeys } from '../fixtures'
import { closeAll, openEach } from './connect'
import { type Latency, latency, perSecond } from './latency'

export type JobsMode = 'dispatch' | 'broadcast'

export interface JobsOptions {
  mode: JobsMode
  agents: number
  requesters: number
  /** jobs each requester keeps in flight (closed loop) */
  window: number
  /** an open loop instead: jobs/s over all requesters, whatever the results */
  ratePerSec?: number
  jobs: number
  maxSeconds: number
  onStart?: () => Promise<void>
  onEnd?: () => Promise<void>
}

export interface JobsResult {
  /** jobs whose first result reached their requester, per second of the timed window */
  jobsPerSec: number
  completed: number
  /** request published → its (first) assignment at an agent; broadcast: → the request at the first agent */
  assignment: Latency
  /** request published → its first result at the requester */
  endToEnd: Latency
  /** results beyond the first per job: work done more than once */
  duplicated: number
  refused: number
  /** set when the window ended before every job had its result */
  incomplete?: string
}

const KIND_REQUEST = 5050
const CAPABILITY = 'bench-echo'
export type Key = { secret: Uint8Array; pubkey: string }
const schnorr = createRequire(import.meta.url)('bcrypto/lib/schnorr') as { sign(m: Buffer, k: Buffer, a: Buffer): Buffer }

export function sign(key: Key, kind: number, tags: string[][], content: string): BenchEvent {
  const created_at = Math.floor(Date.now() / 1000)
  const hash = createHash('sha256')
    .update(JSON.stringify([0, key.pubkey, created_at, kind, tags, content]))
    .digest()
  const sig = schnorr.sign(hash, Buffer.from(key.secret), randomBytes(32)).toString('hex')
  return { id: hash.toString('hex'), pubkey: key.pubkey, created_at, kind, tags, content, sig }
}

export const send = (ws: WebSocket, e: BenchEvent) => ws.send(`["EVENT",${JSON.stringify(e)}]`)
export const tagOf = (e: BenchEvent, name: string) => e.tags.find((t) => t[0] === name)?.[1]

/** Connects and authenticates `key` (NIP-42 with the relay's challenge); resolves once AUTH is OK. */
export function authed(url: string, key: Key): Promise<WebSocket> {
  // the challenge may arrive in the same read as the upgrade's answer: listen before the socket opens
  const ws = new WebSocket(url, { perMessageDeflate: false, skipUTF8Validation: true, handshakeTimeout: 15_000 })
  return new Promise<WebSocket>((resolve, reject) => {
    let authId = ''
    const onMessage = (data: WebSocket.RawData) => {
      const f = JSON.parse(data.toString()) as unknown[]
      if (f[0] === 'AUTH') {
        const e = sign(
          key,
          22_242,
          [
            ['relay', url],
            ['challenge', String(f[1])],
          ],
          '',
        )
        authId = e.id
        ws.send(JSON.stringify(['AUTH', e]))
      } else if (f[0] === 'OK' && f[1] === authId) {
        ws.off('message', onMessage)
        ws.removeAllListeners('error')
        ws.on('error', () => {})
        f[2] ? resolve(ws) : reject(new Error(`AUTH refused: ${String(f[3])}`))
      }
    }
    ws.on('message', onMessage)
    ws.once('error', reject)
  })
}

/** An authenticated agent: its subscription `work` open with `filter`, announced with `capability`, one heartbeat sent. */
export async function listeningAgent(url: string, key: Key, filter: object, capability: string, concurrency: number): Promise<WebSocket> {
  const ws = await authed(url, key)
  ws.send(JSON.stringify(['REQ', 'work', filter]))
  const tags = [
    ['d', 'apiary-agent'],
    ['c', capability],
    ['concurrency', String(concurrency)],
  ]
  send(ws, sign(key, 31_990, tags, '{}'))
  send(ws, sign(key, 20_001, [], 'online'))
  return ws
}

/** One agent: announced, heartbeating, listening; answers each job with processing and a result. */
async function startAgent(url: string, key: Key, mode: JobsMode, seen: (job: string, at: number) => void): Promise<WebSocket> {
  const filter =
    mode === 'dispatch' ? { kinds: [25_900], '#p': [key.pubkey] } : { kinds: [KIND_REQUEST], since: Math.floor(Date.now() / 1000) }
  const ws = await listeningAgent(url, key, filter, CAPABILITY, 8)
  ws.on('message', (data) => {
    const s = data.toString()
    if (!s.startsWith('["EVENT","work"')) return
    const e = (JSON.parse(s) as [string, string, BenchEvent])[2]
    const request = mode === 'dispatch' ? (JSON.parse(e.content) as BenchEvent) : e
    if (mode === 'dispatch' && tagOf(e, 'status') !== 'assigned') return
    seen(request.id, performance.now())
    const generation = mode === 'dispatch' ? [['generation', tagOf(e, 'generation')!]] : []
    const about = [['e', request.id], ['p', request.pubkey], ...generation]
    send(ws, sign(key, 7000, [['status', 'processing'], ...about], ''))
    send(ws, sign(key, KIND_REQUEST + 1000, about, request.content))
  })
  return ws
}

export async function runJobs(url: string, o: JobsOptions): Promise<JobsResult> {
  const agentKeys = benchKeys(o.agents, 'jobs-agent')
  const requesterKeys = benchKeys(o.requesters, 'jobs-requester')
  const sentAt = new Map<string, number>()
  const assignedAt = new Map<string, number>()
  const results = new Map<string, number>()
  let duplicated = 0
  let refused = 0
  const agents = await openEach(o.agents, 20, (i) =>
    startAgent(url, agentKeys[i]!, o.mode, (job, at) => {
      if (!assignedAt.has(job)) assignedAt.set(job, at)
    }),
  )
  const requesters = await openEach(o.requesters, 10, (i) => authed(url, requesterKeys[i]!))
  await Promise.all(
    requesters.map(
      (ws, i) =>
        new Promise<void>((resolve) => {
          ws.on('message', function eose(data) {
            if (!data.toString().startsWith('["EOSE"')) return
            ws.off('message', eose)
            resolve()
          })
          ws.send(JSON.stringify(['REQ', 'results', { kinds: [KIND_REQUEST + 1000], '#p': [requesterKeys[i]!.pubkey] }]))
        }),
    ),
  )
  // the announcements and heartbeats are in, so every agent is ACTIVE before the first job
  await new Promise((r) => setTimeout(r, 500))
  await o.onStart?.()
  const t0 = performance.now()
  const perRequester = Math.ceil(o.jobs / o.requesters)
  let done = 0
  const paces: ReturnType<typeof setInterval>[] = []
  await new Promise<void>((resolve) => {
    const stop = setTimeout(resolve, o.maxSeconds * 1000)
    requesters.forEach((ws, i) => {
      let sent = 0
      const next = () => {
        if (sent >= perRequester) return
        sent++
        const tags = [['c', CAPABILITY], ['i', `job ${i}.${sent}`, 'text'], ...(o.mode === 'dispatch' ? [['dispatch']] : [])]
        const job = sign(requesterKeys[i]!, KIND_REQUEST, tags, `job ${i}.${sent}`)
        sentAt.set(job.id, performance.now())
        send(ws, job)
      }
      ws.on('message', (data) => {
        const s = data.toString()
        if (s.startsWith('["OK"')) {
          const f = JSON.parse(s) as [string, string, boolean, string]
          if (!f[2] && sentAt.has(f[1])) {
            refused++
            done++
            if (o.ratePerSec === undefined) next()
          }
          return
        }
        if (!s.startsWith('["EVENT","results"')) return
        const e = (JSON.parse(s) as [string, string, BenchEvent])[2]
        const job = tagOf(e, 'e')!
        if (results.has(job)) {
          duplicated++
          return
        }
        results.set(job, performance.now())
        if (++done >= perRequester * o.requesters) {
          clearTimeout(stop)
          resolve()
        }
        if (o.ratePerSec === undefined) next()
      })
      if (o.ratePerSec === undefined) {
        for (let k = 0; k < o.window; k++) next()
        return
      }
      // every 5 ms, what this requester's share of the rate says is due by now
      const share = o.ratePerSec / o.requesters
      const pace = setInterval(() => {
        const due = Math.min(perRequester, Math.floor(((performance.now() - t0) * share) / 1000))
        while (sent < due) next()
        if (sent >= perRequester) clearInterval(pace)
      }, 5)
      paces.push(pace)
    })
  })
  const ms = performance.now() - t0
  for (const pace of paces) clearInterval(pace)
  await o.onEnd?.()
  // a broadcast's other copies are still arriving: give them a moment to be counted
  if (o.mode === 'broadcast') await new Promise((r) => setTimeout(r, 1_000))
  closeAll([...agents, ...requesters])
  const assign: number[] = []
  const end: number[] = []
  for (const [job, at] of sentAt) {
    const a = assignedAt.get(job)
    if (a !== undefined) assign.push(a - at)
    const r = results.get(job)
    if (r !== undefined) end.push(r - at)
  }
  return {
    jobsPerSec: perSecond(results.size, ms),
    completed: results.size,
    assignment: latency(assign),
    endToEnd: latency(end),
    duplicated,
    refused,
    ...(results.size + refused < perRequester * o.requesters
      ? { incomplete: `${results.size} of ${perRequester * o.requesters} jobs had a result within ${o.maxSeconds} s` }
      : {}),
  }
}
