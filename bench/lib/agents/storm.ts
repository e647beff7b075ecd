// The storm of the agents scenario: SIGKILL the relay under the whole fleet (every shard
// at once), publish while it is down, restart it on the same port and data dir, and measure the way back:
// time until all N are ACTIVE, relay and shard load, AUTHs refused by shaping, queued publishes lost,
// deliveries missing or doubled (over every job published so far, by every subscriber).
import { connect } from '../load/connect'
import { type Latency, latency } from '../load/latency'
import { isAlive, relayCpu } from '../proc-readings'
import { counterOf, scrapeMetrics } from '../relay-metrics'
import type { RelayProcess } from '../relay-process'
import { deliveryFigures } from './fleet'
import type { ShardLoad } from './shard-protocol'
import {
  askAll,
  collectDeliveries,
  collectLedger,
  fleetStatus,
  nowEpochMs,
  round2,
  type Shard,
  shareOf,
  sleep,
  sumCounts,
  until,
} from './shards'

/** What a storm needs: the fleet's shards, the relay now running, how to start it again (with an AUTH limit). */
export interface StormBench {
  opts: { agents: number; stormPublishers: number; recoveryTimeoutMs: number }
  shards: Shard[]
  current: { relay: RelayProcess }
  spawn: (maxConcurrentAuth?: number) => Promise<RelayProcess>
}

export interface StormFigures {
  /** the relay's limits.maxConcurrentAuth for this storm (its default when not set) */
  maxConcurrentAuth: number | 'default'
  outageMs: number
  /** restart (relay listening again) → all N ACTIVE; NaN when not all were within recoveryTimeoutMs */
  allActiveSeconds: number
  /** per agent: restart → its ACTIVE */
  reactive: Latency
  notActive: number
  relayCores: number
  relayPeakCores: number
  /** over all shards */
  loadGenCores: number
  shardLoad: ShardLoad[]
  shapedAuth: number
  shapedSeen: number
  reconnects: number
  publishedQueued: number
  notQueued: number
  queuedLost: number
  ackedLost: number
  /** queued (and lost, missing, doubled) are over every publish so far: a second storm checks the first's too */
  /** over traffic and outage jobs, every subscriber */
  deliveries: number
  duplicates: number
  missing: number
  /** the first few missing deliveries: subscriber index, event id, how its publish resolved, created_at */
  missed: string[]
  causes: Record<string, number>
}

let stormCount = 0

export async function storm(bench: StormBench, maxConcurrentAuth?: number): Promise<StormFigures> {
  const { opts, shards } = bench
  const { reconnects: reconnects0 } = await fleetStatus(shards)
  // the ledgers hold every publish so far: a storm reports the ones that resolved queued since it began
  const queuedBefore = (await collectLedger(shards)).queued.size
  await askAll(shards, { type: 'RecordCauses', on: true })
  const tKill = performance.now()
  const notQueued = await killAndPublish(bench, ++stormCount)

  bench.current.relay = await bench.spawn(maxConcurrentAuth)
  const tReady = performance.now()
  const readyEpochMs = nowEpochMs()
  await askAll(shards, { type: 'MeasureStart' })
  const cpu = watchRelayCpu(bench.current.relay.pid)
  const allActive = await until(async () => (await fleetStatus(shards)).active === opts.agents, opts.recoveryTimeoutMs, 100)
  const relay = cpu.stop()
  const shardLoad = await askAll(shards, { type: 'MeasureStop' })
  const status = await fleetStatus(shards)
  const reactive = latency(Float64Array.from((await askAll(shards, { type: 'ActiveSince', sinceEpochMs: readyEpochMs })).flat()))
  const shapedAuth = counterOf(await scrapeMetrics(bench.current.relay.url), 'apiary_auth_shaped_total')
  const causes = sumCounts(await askAll(shards, { type: 'RecordCauses', on: false }))
  return {
    maxConcurrentAuth: maxConcurrentAuth ?? 'default',
    outageMs: Math.round(tReady - tKill),
    allActiveSeconds: allActive ? round2((status.lastActiveEpochMs - readyEpochMs) / 1000) : Number.NaN,
    reactive,
    notActive: opts.agents - status.active,
    relayCores: relay.meanCores,
    relayPeakCores: relay.peakCores,
    loadGenCores: round2(shardLoad.reduce((s, l) => s + l.cores, 0)),
    shardLoad,
    shapedAuth,
    shapedSeen: causes['AUTH rate-limited (shaped)'] ?? 0,
    reconnects: status.reconnects - reconnects0,
    notQueued,
    causes,
    ...(await afterTheStorm(bench, readyEpochMs, queuedBefore)),
  }
}

/** SIGKILL, wait until every agent has left ACTIVE, publish from stormPublishers agents: how many not queued */
async function killAndPublish(bench: StormBench, nth: number): Promise<number> {
  const { opts, shards } = bench
  const killed = bench.current.relay
  process.kill(killed.pid, 'SIGKILL')
  await until(() => !isAlive(killed.pid), 10_000, 10)
  // the kernel closed the relay's sockets: every agent sees its close and leaves ACTIVE
  await until(async () => (await fleetStatus(shards)).active === 0, 10_000, 50)
  const content = `bench job during outage ${nth}, agent`
  const notQueued = await askAll(shards, (k) => ({
    type: 'PublishOutage',
    count: shareOf(opts.stormPublishers, k, shards.length),
    content,
  }))
  return notQueued.reduce((s, x) => s + x, 0)
}

/** the relay's CPU from /proc (no IPC to a relay busy with a storm): mean, and the busiest second */
function watchRelayCpu(pid: number): { stop(): { meanCores: number; peakCores: number } } {
  const cpu = relayCpu(pid)
  const first = { at: performance.now(), seconds: cpu.seconds() }
  let last = first
  let peak = 0
  const sampler = setInterval(() => {
    const now = { at: performance.now(), seconds: cpu.seconds() }
    peak = Math.max(peak, (now.seconds - last.seconds) / ((now.at - last.at) / 1000))
    last = now
  }, 1_000)
  return {
    stop() {
      clearInterval(sampler)
      const seconds = (performance.now() - first.at) / 1000
      return { meanCores: round2((cpu.seconds() - first.seconds) / seconds), peakCores: round2(peak) }
    },
  }
}

/**
 * Every publish that resolved queued: true (the outage's, and traffic in flight at the kill) is flushed after
 * its agent's handshake, one per 50 ms; then the relay is asked for them, and the subscribers for deliveries.
 */
async function afterTheStorm(bench: StormBench, readyEpochMs: number, queuedBefore: number) {
  const shards: Shard[] = bench.shards
  await until(async () => (await fleetStatus(shards)).queued === 0, 30_000, 100)
  const ledger = await collectLedger(shards)
  const stored = await storedIds(bench.current.relay.url, [...ledger.all])
  const delivered = async () => {
    const { deliveries, lastActiveEpochMs } = await collectDeliveries(shards)
    return { ...deliveryFigures(deliveries, ledger.all), lastActiveEpochMs }
  }
  await until(async () => (await delivered()).missing === 0, 10_000, 250)
  await sleep(1_000) // a duplicate from the resume's overlap would arrive by now
  const d = await delivered()
  return {
    publishedQueued: ledger.queued.size - queuedBefore,
    queuedLost: [...ledger.queued].filter((id) => !stored.has(id)).length,
    ackedLost: [...ledger.acked].filter((id) => !stored.has(id)).length,
    deliveries: d.deliveries,
    duplicates: d.duplicates,
    missing: d.missing,
    missed: d.missed.map((m) => {
      const [subscriber, id] = m.split(':') as [string, string]
      const activeAt = Math.round((d.lastActiveEpochMs.get(Number(subscriber)) ?? Number.NaN) - readyEpochMs)
      const how = ledger.queued.has(id) ? 'queued' : 'acked'
      return `agent ${subscriber} (ACTIVE again at +${activeAt} ms) missed ${id.slice(0, 12)} (${how}, created_at ${ledger.createdAt.get(id)})`
    }),
  }
}

/** The ids of `ids` the relay has stored, asked by id: 500 per filter (maxLimit), with `limit` set, as a filter
 * without one gets the relay's defaultLimit (100). */
async function storedIds(url: string, ids: string[]): Promise<Set<string>> {
  const ws = await connect(url)
  const found = new Set<string>()
  try {
    for (let i = 0; i < ids.length; i += 500) {
      const subId = `ids-${i}`
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no EOSE for the ids query within 10 s')), 10_000)
        const onMessage = (data: unknown) => {
          const msg = JSON.parse(String(data)) as [string, string, { id: string }?]
          if (msg[1] !== subId) return
          if (msg[0] === 'EVENT' && msg[2]) found.add(msg[2].id)
          else if (msg[0] === 'EOSE' || msg[0] === 'CLOSED') {
            clearTimeout(timer)
            ws.off('message', onMessage)
            ws.send(JSON.stringify(['CLOSE', subId]))
            resolve()
          }
        }
        ws.on('message', onMessage)
        const chunk = ids.slice(i, i + 500)
        ws.send(JSON.stringify(['REQ', subId, { ids: chunk, limit: chunk.length }]))
      })
    }
  } finally {
    ws.close()
  }
  return found
}
