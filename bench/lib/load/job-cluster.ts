// The jobs loads on a mesh cluster (docs/jobs.md#in-a-cluster). Chunk latency: one agent streams CHUNKS chunks
// per job, each carrying the moment it was sent (this process's clock: the agent and both requesters run here),
// to a requester on another node and to one on the agent's own node. Reassignment: two holder agents (child
// processes that accept a job and never finish it) on one node; the one that got the job is killed with SIGKILL,
// and the time until the other is assigned it is measured, then the killed one is replaced.
import { type ChildProcess, fork } from 'node:child_process'
import type WebSocket from 'ws'
import type { BenchEvent } from '../fixtures'
import { benchKeys } from '../fixtures'
import { authed, type Key, listeningAgent, send, sign, tagOf } from './jobs'
import { type Latency, latency } from './latency'

const KIND_REQUEST = 5050
const KIND_CHUNK = 25_901
const STREAM = 'bench-stream'
export const HOLD = 'bench-hold'

const frameOf = (data: WebSocket.RawData) => JSON.parse(data.toString()) as unknown[]

/** Announced with `capability`, heartbeating every second, listening for its assignments. */
export async function agentOn(url: string, key: Key, capability: string, onAssigned: (assignment: BenchEvent) => void) {
  const ws = await listeningAgent(url, key, { kinds: [25_900], '#p': [key.pubkey] }, capability, 4)
  const beat = setInterval(() => send(ws, sign(key, 20_001, [], 'online')), 1_000)
  ws.on('close', () => clearInterval(beat))
  ws.on('message', (data) => {
    const f = frameOf(data)
    if (f[0] !== 'EVENT' || f[1] !== 'work') return
    const e = f[2] as BenchEvent
    if (tagOf(e, 'status') === 'assigned') onAssigned(e)
  })
  return ws
}

async function requesterOn(url: string, key: Key, onChunk: (e: BenchEvent, at: number) => void, onResult: (job: string) => void) {
  const ws = await authed(url, key)
  await new Promise<void>((resolve) => {
    ws.on('message', function eose(data) {
      if (!data.toString().startsWith('["EOSE"')) return
      ws.off('message', eose)
      resolve()
    })
    ws.send(JSON.stringify(['REQ', 'answers', { kinds: [KIND_CHUNK, KIND_REQUEST + 1000], '#p': [key.pubkey] }]))
  })
  ws.on('message', (data) => {
    const at = performance.now()
    const f = frameOf(data)
    if (f[0] !== 'EVENT' || f[1] !== 'answers') return
    const e = f[2] as BenchEvent
    if (e.kind === KIND_CHUNK) onChunk(e, at)
    else onResult(tagOf(e, 'e')!)
  })
  return ws
}

const requestOf = (key: Key, capability: string, input: string) =>
  sign(key, KIND_REQUEST, [['c', capability], ['dispatch'], ['i', input, 'text']], input)

export interface ChunkLatency {
  /** chunk sent by the agent → at a requester on the other node */
  across: Latency
  /** → at a requester on the agent's node */
  same: Latency
  chunks: { across: number; same: number; expected: number }
}

/** `jobs` jobs one after another, alternating the requester, each streamed in `chunks` chunks. */
export async function chunkLatency(agentNode: string, otherNode: string, o: { jobs: number; chunks: number }): Promise<ChunkLatency> {
  const [agentKey, acrossKey, sameKey] = benchKeys(3, 'jobs-cluster-chunks') as [Key, Key, Key]
  const samples = { across: [] as number[], same: [] as number[] }
  const waiting = new Map<string, () => void>()
  const agent = await agentOn(agentNode, agentKey, STREAM, (assignment) => {
    const request = JSON.parse(assignment.content) as BenchEvent
    const about = [
      ['e', request.id],
      ['p', request.pubkey],
      ['generation', tagOf(assignment, 'generation')!],
    ]
    send(agent, sign(agentKey, 7000, [['status', 'processing'], ...about], ''))
    for (let seq = 0; seq < o.chunks; seq++)
      send(agent, sign(agentKey, KIND_CHUNK, [...about, ['seq', String(seq)]], String(performance.now())))
    send(agent, sign(agentKey, KIND_REQUEST + 1000, about, 'done'))
  })
  const record = (into: number[]) => (e: BenchEvent, at: number) => into.push(at - Number(e.content))
  const finished = (job: string) => waiting.get(job)?.()
  const across = await requesterOn(otherNode, acrossKey, record(samples.across), finished)
  const same = await requesterOn(agentNode, sameKey, record(samples.same), finished)
  // the agent's announcement and heartbeat are in, and the owner polled its node, before the first job
  await new Promise((r) => setTimeout(r, 2_500))
  for (let i = 0; i < o.jobs; i++) {
    const [ws, key] = i % 2 === 0 ? [across, acrossKey] : [same, sameKey]
    const job = requestOf(key, STREAM, `job ${i}`)
    const done = new Promise<void>((resolve) => waiting.set(job.id, resolve))
    send(ws, job)
    await Promise.race([done, new Promise((r) => setTimeout(r, 10_000))])
    waiting.delete(job.id)
  }
  // the last chunks may still be on their way to the other node's requester
  await new Promise((r) => setTimeout(r, 500))
  for (const ws of [agent, across, same]) ws.close()
  const expected = Math.ceil(o.jobs / 2) * o.chunks
  return {
    across: latency(samples.across),
    same: latency(samples.same),
    chunks: { across: samples.across.length, same: samples.same.length, expected },
  }
}

/** A holder agent in a child process: accepts every job it is given and never finishes one. */
class Holder {
  readonly proc: ChildProcess
  readonly assigned: { job: string; generation: number; at: number }[] = []
  private readonly listeners = new Set<() => void>()
  readonly ready: Promise<void>

  constructor(url: string, keyIndex: number) {
    this.proc = fork(new URL('../../processes/job-holder.ts', import.meta.url), [url, String(keyIndex)], { stdio: 'inherit' })
    this.ready = new Promise((resolve, reject) => {
      this.proc.once('exit', (code) => reject(new Error(`holder exited (${code}) before it was ready`)))
      this.proc.on('message', (m: { ready?: true; job?: string; generation?: number }) => {
        if (m.ready) resolve()
        if (m.job) {
          this.assigned.push({ job: m.job, generation: m.generation!, at: performance.now() })
          for (const l of this.listeners) l()
        }
      })
    })
  }

  /** resolves once it was assigned `job` */
  holds(job: string, timeoutMs: number): Promise<number | undefined> {
    return new Promise((resolve) => {
      const check = () => {
        const a = this.assigned.find((x) => x.job === job)
        if (!a) return
        this.listeners.delete(check)
        clearTimeout(timer)
        resolve(a.at)
      }
      const timer = setTimeout(() => {
        this.listeners.delete(check)
        resolve(undefined)
      }, timeoutMs)
      this.listeners.add(check)
      check()
    })
  }

  kill(): Promise<void> {
    return new Promise((resolve) => {
      if (this.proc.exitCode !== null || this.proc.signalCode !== null) return resolve()
      this.proc.once('exit', () => resolve())
      this.proc.kill('SIGKILL')
    })
  }
}

export interface Reassignment {
  /** SIGKILL of the agent holding the job → the other agent assigned it */
  latency: Latency
  failures: number
}

/** `trials` times: a job to one of two holders on `workerNode`, that holder killed, the other assigned it. */
export async function reassignmentAfterKill(workerNode: string, requesterNode: string, trials: number): Promise<Reassignment> {
  const [requesterKey] = benchKeys(1, 'jobs-cluster-requester') as [Key]
  const requester = await authed(requesterNode, requesterKey)
  let keyIndex = 0
  const holders = [new Holder(workerNode, keyIndex++), new Holder(workerNode, keyIndex++)]
  await Promise.all(holders.map((h) => h.ready))
  await new Promise((r) => setTimeout(r, 2_500))
  const samples: number[] = []
  let failures = 0
  try {
    for (let t = 0; t < trials; t++) {
      const job = requestOf(requesterKey, HOLD, `trial ${t}`)
      send(requester, job)
      const first = await Promise.race(holders.map((h, i) => h.holds(job.id, 10_000).then((at) => (at === undefined ? -1 : i))))
      if (first < 0) {
        failures++
        continue
      }
      const other = holders[1 - first]!
      const killedAt = performance.now()
      await holders[first]!.kill()
      const at = await other.holds(job.id, 15_000)
      if (at === undefined) failures++
      else samples.push(at - killedAt)
      // the other holder keeps the job (it never finishes); a fresh pair for the next trial
      await other.kill()
      holders.splice(0, 2, new Holder(workerNode, keyIndex++), new Holder(workerNode, keyIndex++))
      await Promise.all(holders.map((h) => h.ready))
      await new Promise((r) => setTimeout(r, 2_500))
    }
  } finally {
    await Promise.all(holders.map((h) => h.kill()))
    requester.close()
  }
  return { latency: latency(samples), failures }
}
