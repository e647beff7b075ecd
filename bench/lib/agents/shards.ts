// The parent's side of bench/processes/agent-shard.ts: fork the load processes of the agents scenario, ask them
// over IPC (typed by the request's `type`), and merge what they answer. Latencies are merged as raw samples,
// never as percentiles (the p99 of three p99s is not the fleet's p99).
import { type ChildProcess, fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { type Latency, latency } from '../load/latency'
import type { Deliveries } from './fleet'
import type { HandshakeSamples, ShardAnswer, ShardMessage, ShardReplies, ShardRequest } from './shard-protocol'

/** the client's reconnect.stableMs default: backoff restarts at 1 s only for an agent ACTIVE that long */
export const STABLE_MS = 30_000
/**
 * The mean time between an ACTIVE agent's heartbeats: the client's heartbeatSeconds default (15 s, which a
 * relay's 45 s lease leaves as it is), each interval shortened by up to 10 % at random, uniformly.
 */
export const MEAN_HEARTBEAT_MS = 15_000 * 0.95
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
export const round2 = (x: number) => Math.round(x * 100) / 100
/** epoch ms, as the shards report times */
export const nowEpochMs = () => performance.timeOrigin + performance.now()

export async function until(check: () => boolean | Promise<boolean>, timeoutMs: number, stepMs = 25): Promise<boolean> {
  const end = performance.now() + timeoutMs
  while (!(await check())) {
    if (performance.now() > end) return false
    await sleep(stepMs)
  }
  return true
}

type Ask = <R extends ShardRequest>(req: R, timeoutMs?: number) => Promise<ShardReplies[R['type']]>

export interface Shard {
  readonly name: string
  readonly pid: number
  ask: Ask
  close(): Promise<void>
}

const SCRIPT = fileURLToPath(new URL('../../processes/agent-shard.ts', import.meta.url))

export function forkShard(name: string, nodeArgs: string[] = []): Shard {
  const child: ChildProcess = fork(SCRIPT, [], {
    execArgv: ['--import', 'tsx', ...nodeArgs],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  })
  let nextId = 1
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>()
  child.on('message', (m: ShardAnswer) => {
    const p = pending.get(m.id)
    pending.delete(m.id)
    if (m.ok) p?.resolve(m.result)
    else p?.reject(new Error(`${name}: ${m.error}`))
  })
  child.on('exit', (code, signal) => {
    for (const p of pending.values()) p.reject(new Error(`${name} exited (${signal ?? code})`))
    pending.clear()
  })
  const ask: Ask = (req, timeoutMs = 600_000) =>
    new Promise((resolve, reject) => {
      if (!child.connected) return reject(new Error(`${name} is gone`))
      const id = nextId++
      const timer = setTimeout(() => {
        pending.delete(id)
        reject(new Error(`${name} did not answer ${req.type} within ${timeoutMs} ms`))
      }, timeoutMs)
      const settle =
        <A extends unknown[]>(f: (...a: A) => void) =>
        (...a: A) => {
          clearTimeout(timer)
          f(...a)
        }
      pending.set(id, { resolve: settle(resolve as (v: unknown) => void), reject: settle(reject) })
      child.send({ id, req } satisfies ShardMessage)
    })
  const close = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise<void>((r) => child.once('exit', () => r()))
    child.disconnect()
    const killer = setTimeout(() => child.kill('SIGKILL'), 10_000)
    await exited
    clearTimeout(killer)
  }
  return { name, pid: child.pid!, ask, close }
}

/** The same request to every shard, answers in shard order. */
export function askAll<R extends ShardRequest>(
  shards: Shard[],
  req: R | ((k: number) => R),
  timeoutMs?: number,
): Promise<ShardReplies[R['type']][]> {
  return Promise.all(shards.map((s, k) => s.ask(typeof req === 'function' ? req(k) : req, timeoutMs)))
}

/** Shard k's part of `total` (the parts differ by at most one and sum to `total`). */
export const shareOf = (total: number, k: number, shards: number) =>
  Math.floor(((k + 1) * total) / shards) - Math.floor((k * total) / shards)

export interface HandshakeFigures {
  startToActive: Latency
  socketToActive: Latency
  auth: Latency
  register: Latency
}

export function mergeHandshakes(parts: HandshakeSamples[]): HandshakeFigures {
  const merged = (key: keyof HandshakeSamples) => latency(Float64Array.from(parts.flatMap((p) => p[key])))
  return {
    startToActive: merged('startToActive'),
    socketToActive: merged('socketToActive'),
    auth: merged('auth'),
    register: merged('register'),
  }
}

export function sumCounts(parts: Record<string, number>[]): Record<string, number> {
  const out: Record<string, number> = {}
  for (const p of parts) for (const [k, n] of Object.entries(p)) out[k] = (out[k] ?? 0) + n
  return out
}

/** the fleet now, summed over its shards (lastActiveEpochMs: the latest transition into ACTIVE of any agent) */
export async function fleetStatus(shards: Shard[]) {
  const parts = await askAll(shards, { type: 'Status' })
  const sum = (f: (p: (typeof parts)[number]) => number) => parts.reduce((s, p) => s + f(p), 0)
  return {
    active: sum((p) => p.active),
    reconnects: sum((p) => p.reconnects),
    queued: sum((p) => p.queued),
    lastActiveEpochMs: Math.max(...parts.map((p) => p.lastActiveEpochMs)),
  }
}

/** every shard's ledger (each settled first): what must be stored, and how each publish resolved */
export async function collectLedger(shards: Shard[]) {
  const parts = await askAll(shards, { type: 'Ledger' })
  const acked = new Set(parts.flatMap((p) => p.acked))
  const queued = new Set(parts.flatMap((p) => p.queued))
  return { acked, queued, all: new Set([...acked, ...queued]), createdAt: new Map(parts.flatMap((p) => p.createdAt)) }
}

/** every subscriber's deliveries, and when each was last ACTIVE (epoch ms) */
export async function collectDeliveries(shards: Shard[]): Promise<{ deliveries: Deliveries; lastActiveEpochMs: Map<number, number> }> {
  const parts = (await askAll(shards, { type: 'Deliveries' })).flat()
  return {
    deliveries: new Map(parts.map((p) => [p.subscriber, new Map(p.seen)])),
    lastActiveEpochMs: new Map(parts.map((p) => [p.subscriber, p.lastActiveEpochMs])),
  }
}
