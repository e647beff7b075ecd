// One load process of the agents scenario (bench/lib/agents/shards.ts forks K of these, and one more as the
// probe): it owns a share of the fleet (bench/lib/agents/fleet.ts) and does what the parent asks over IPC.
// Processes, because signing and verifying for thousands of agents in one process would make that process
// the bottleneck of the handshakes it measures. Times that leave this process are epoch milliseconds
// (timeOrigin + performance.now()): comparable across processes, unlike performance.now() alone.
// Crash policy: none. An error answers its request; a lost parent (IPC disconnect) ends the process.
import type { IntervalHistogram } from 'node:perf_hooks'
import type { PublishResult } from '../built-package'
import { knobs } from '../knobs'
import { AgentFleet, PublishLedger, type TrackedAgent } from '../lib/agents/fleet'
import type { HandshakeSamples, ShardAnswer, ShardLoad, ShardMessage, ShardReplies, ShardRequest } from '../lib/agents/shard-protocol'
import { startGcPauses, startLoopDelay, startStallTimeline, stopLoopDelay, writeTimeline } from '../lib/loop-delay'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const round2 = (x: number) => Math.round(x * 100) / 100
const epoch = (t: number) => Math.round((performance.timeOrigin + t) * 100) / 100

interface ShardState {
  fleet?: AgentFleet
  ledger: PublishLedger
  measure?: { eld: IntervalHistogram; cpu: NodeJS.CpuUsage; t0: number; timeline: { stop(): unknown }[] }
  nextPublisher: number
}

const state: ShardState = { ledger: new PublishLedger(), nextPublisher: 0 }
const fleetOf = (s: ShardState) => s.fleet ?? fail('no Create yet')

function fail(why: string): never {
  throw new Error(why)
}

async function handle(s: ShardState, req: ShardRequest): Promise<ShardReplies[ShardRequest['type']]> {
  switch (req.type) {
    case 'Create':
      s.fleet = await AgentFleet.create(req.url, req.count, req.first, 'agents', fromAddress(req.localAddress))
      return null
    case 'StartInWaves':
      return startInWaves(fleetOf(s), req.waveSize, req.spacingMs)
    case 'Probe':
      return probe(req.url, req.count, req.intervalMs, req.localAddress)
    case 'MeasureStart':
      s.measure = startMeasure('shard')
      return null
    case 'MeasureStop':
      return stopMeasure(s.measure ?? fail('MeasureStop without MeasureStart'))
    case 'Subscribe':
      for (const t of fleetOf(s).agents.slice(0, req.count)) fleetOf(s).subscribe(t, req.filter)
      return null
    case 'Publish': {
      // the last `publishers` agents of this shard, in turn; the result lands in the ledger
      const agents = fleetOf(s).agents
      void publishJob(agents[agents.length - 1 - (s.nextPublisher++ % req.publishers)]!, s.ledger, req.content)
      return null
    }
    case 'PublishOutage':
      return publishOutage(fleetOf(s), s.ledger, req.count, req.content)
    case 'Status':
      return status(fleetOf(s))
    case 'ActiveSince':
      return fleetOf(s)
        .agents.map((t) => epoch(t.lastActiveAt) - req.sinceEpochMs)
        .filter((ms) => ms > 0)
    case 'RecordCauses':
      return recordCauses(fleetOf(s), req.on)
    case 'Ledger':
      return ledgerOf(s.ledger)
    case 'Deliveries':
      return deliveriesOf(fleetOf(s))
    case 'StopAll':
      await fleetOf(s).stopAll()
      return null
    default:
      return req satisfies never
  }
}

const fromAddress = (localAddress: string | undefined) => (localAddress === undefined ? {} : { localAddress })

/** `name`: what the timeline files call this process's GC pauses and stalls over the span */
function startMeasure(name: string): NonNullable<ShardState['measure']> {
  const timeline = knobs.timelineDir ? [startGcPauses(`${name}-gc`), startStallTimeline(`${name}-stalls`)] : []
  return { eld: startLoopDelay(), cpu: process.cpuUsage(), t0: performance.now(), timeline }
}

function stopMeasure(m: NonNullable<ShardState['measure']>): ShardLoad {
  const loopDelay = stopLoopDelay(m.eld)
  const cpu = process.cpuUsage(m.cpu)
  const cores = round2((cpu.user + cpu.system) / 1000 / Math.max(1, performance.now() - m.t0))
  for (const t of m.timeline) t.stop()
  return { loopDelay, cores }
}

function samplesOf(agents: TrackedAgent[]): HandshakeSamples {
  return {
    startToActive: agents.map((t) => t.activeAt - t.startedAt),
    socketToActive: agents.map((t) => t.activeAt - t.discoveredAt),
    auth: agents.map((t) => t.authenticatedAt - t.discoveredAt),
    register: agents.map((t) => t.activeAt - t.authenticatedAt),
  }
}

/** Waves of `waveSize`, one start() every `spacingMs`; each wave all ACTIVE (60 s bound) before the next. */
async function startInWaves(fleet: AgentFleet, waveSize: number, spacingMs: number): Promise<ShardReplies['StartInWaves']> {
  const n = fleet.agents.length
  for (let w = 0; w < n; w += waveSize) {
    const wave = fleet.agents.slice(w, w + waveSize)
    const started = Promise.all(wave.map((t, j) => sleep(j * spacingMs).then(() => fleet.start(t))))
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`wave at agent ${w}: not all ACTIVE within 60 s (${fleet.active} ACTIVE)`)), 60_000)
    })
    await Promise.race([started, timeout]).finally(() => clearTimeout(timer))
  }
  const secondHalfFrom = Math.ceil(n / 2 / waveSize) * waveSize
  return { all: samplesOf(fleet.agents), secondHalf: samplesOf(fleet.agents.slice(secondHalfFrom)) }
}

/** unmeasured handshakes first: a fresh process pays JIT and the first signature's set-up once */
const PROBE_WARMUP = 5

/**
 * Handshakes only, at a steady offered rate (one start() every `intervalMs`, not waiting for the previous),
 * by agents of their own key set; this process does nothing else, so its samples are the relay's and the
 * network's, and its loop delay says whether that held. The agents say goodbye after the measured span.
 */
async function probe(url: string, count: number, intervalMs: number, localAddress?: string): Promise<ShardReplies['Probe']> {
  const fleet = await AgentFleet.create(url, PROBE_WARMUP + count, 0, 'agents-probe', fromAddress(localAddress))
  for (const t of fleet.agents.slice(0, PROBE_WARMUP)) await fleet.start(t)
  const measured = fleet.agents.slice(PROBE_WARMUP)
  const m = startMeasure('probe')
  await Promise.all(measured.map((t, i) => sleep(i * intervalMs).then(() => fleet.start(t))))
  const load = stopMeasure(m)
  writeTimeline(
    'probe',
    measured.map((t) => ({
      startEpochMs: performance.timeOrigin + t.startedAt,
      discoveredMs: t.discoveredAt - t.startedAt,
      authenticatedMs: t.authenticatedAt - t.startedAt,
      activeMs: t.activeAt - t.startedAt,
    })),
  )
  await fleet.stopAll()
  return { samples: samplesOf(measured), load }
}

function publishJob(t: TrackedAgent, ledger: PublishLedger, content: string): Promise<PublishResult> {
  const createdAt = Math.floor(Date.now() / 1000)
  return ledger.record(t.agent.publish({ kind: 5050, content, tags: [['t', 'bench-agents']], created_at: createdAt }), createdAt)
}

/** `count` of this shard's agents, spread over it, publish one job each while the relay is down */
async function publishOutage(fleet: AgentFleet, ledger: PublishLedger, count: number, content: string): Promise<number> {
  const n = fleet.agents.length
  const publishers = Array.from({ length: count }, (_, i) => fleet.agents[Math.floor((i * n) / count)]!)
  const results = await Promise.all(publishers.map((t) => publishJob(t, ledger, `${content} ${t.index}`)))
  return results.filter((r) => r.ok || !r.queued).length
}

function status(fleet: AgentFleet): ShardReplies['Status'] {
  const { agents, active, closed } = fleet
  const queued = agents.reduce((sum, t) => sum + t.agent.metrics().queueLength, 0)
  const lastActive = agents.reduce((max, t) => Math.max(max, t.lastActiveAt || 0), 0)
  return { agents: agents.length, active, closed, reconnects: fleet.reconnects(), queued, lastActiveEpochMs: epoch(lastActive) }
}

/** on: forget the causes so far and count from now; off: stop counting. Either way: the counts so far. */
function recordCauses(fleet: AgentFleet, on: boolean): Record<string, number> {
  const causes = fleet.causes
  if (on) fleet.causes = {}
  fleet.recordCauses = on
  return causes
}

async function ledgerOf(ledger: PublishLedger): Promise<ShardReplies['Ledger']> {
  await ledger.settled()
  return { acked: [...ledger.acked], queued: [...ledger.queued], createdAt: [...ledger.createdAt], refused: ledger.refused }
}

function deliveriesOf(fleet: AgentFleet): ShardReplies['Deliveries'] {
  return [...fleet.deliveries].map(([subscriber, seen]) => {
    const t = fleet.agents.find((a) => a.index === subscriber)
    return { subscriber, lastActiveEpochMs: epoch(t?.lastActiveAt ?? Number.NaN), seen: [...seen] }
  })
}

// each request is handled as it arrives, beside those still awaiting: a Status during StartInWaves or a storm
// is answered at once, which is what the parent's polling needs
process.on('message', (m: ShardMessage) => {
  handle(state, m.req).then(
    (result) => process.send?.({ id: m.id, ok: true, result } satisfies ShardAnswer),
    (error: unknown) =>
      process.send?.({ id: m.id, ok: false, error: error instanceof Error ? error.message : String(error) } satisfies ShardAnswer),
  )
})
process.on('disconnect', () => process.exit(0))
