// `npm run bench` — Apiary against the baseline (@nostr-relay/core + SQLite, bench/baseline-relay.ts), each
// relay in its own child process, alternating over rounds because this machine is noisy (±30 %).
// Flags: --quick (small counts), --rounds N (default 3), --only a,b (scenarios: ceiling, ingest-pinned, store,
// ingest-closed, ingest-pipelined, fanout, channel-fanout, slow-read, req, ingest-with-reads, idle-memory, agents,
// cluster-fanout, admission, ingest-pg, store-pg, mesh), --relays apiary,baseline, --agent-shards K (agents: load processes, default 3).
// channel-fanout (bench/channel-fanout.ts) runs Apiary only: plain vs public vs private channel events; so do
// slow-read (bench/slow-read.ts: ingest with and without a REQ the store holds 2 s) and ingest-with-reads
// (bench/ingest-with-reads.ts: ingest into the REQ data set with and without 8 readers), and agents
// (bench/agents.ts: N AgentClients over K load processes, the relay SIGKILLed and restarted under them).
// The ingest scenarios (ingest-pinned, ingest-closed, ingest-pipelined, and ingest-pg's kind-1 runs) send the
// default corpus (bench/corpus.ts, a realistic event mix) and read the relay's CPU per event from /proc
// (bench/ingest-corpus.ts); fan-out, slow-read and ingest-with-reads keep the uniform kind-1 set (fixtures.ts).
// The cluster scenarios (bench/cluster.ts; mesh: bench/mesh.ts, three `apiary start` processes with the relay
// mesh on, SIGKILLed and SIGTERMed under a client) need Redis and PostgreSQL on 127.0.0.1; a run without them
// skips those with a note. Prints a table of medians with the DESIGN §12 targets and writes it to
// .bench-data/last-run.json.
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { CHECKPOINT_INTERVAL_MS } from '../src/infra/store/sqlite/wal-checkpointer'
import type { ShardLoad } from './agent-shard'
import type { StormFigures } from './agent-storm'
import { type AgentsResult, agentsStorm } from './agents'
import { CHANNEL_VARIANTS, type ChannelFixtures, channelFanout, channelFixtures } from './channel-fanout'
import { CHILD_SCRIPTS, type LoopDelay, type RelayProcess, spawnRelay } from './child'
import {
  type AdmissionCell,
  admissionBench,
  clusterFanout,
  clusterUnavailable,
  dropBenchDatabases,
  FANOUT_VARIANTS,
  INGEST_VARIANTS,
  ingestOnBackend,
} from './cluster'
import { corpusEvents, describeCorpus } from './corpus'
import { BENCH_DATA_DIR, channelPostEvents, type Dataset, ingestEvents, reqDataset } from './fixtures'
import { type CorpusIngestResult, type CorpusShape, corpusIngest } from './ingest-corpus'
import {
  ingestWithReads,
  isUnreniced,
  READ_LOAD_VARIANTS,
  READER_SHAPES,
  type ReadersFigures,
  type ReadLoadResult,
  UNRENICED_CONFIG,
} from './ingest-with-reads'
import {
  fanout,
  type IdleMemoryResult,
  idleConnectionMemory,
  ingestPipelined,
  type Latency,
  REQ_SHAPES,
  type ReqShapeResult,
  reqLatency,
} from './load'
import { type MeshFigures, meshBench } from './mesh'
import { openFilesLimit } from './relay-readings'
import { SLOW_READ_VARIANTS, slowReadIngest } from './slow-read'
import { STORE_VARIANTS, type StoreCost, type StoreVariant, storeCost } from './store-cost'
import { PG_STORE_VARIANTS, type PgStoreCost, type PgStoreVariant, pgStoreCost } from './store-cost-pg'
import type { VerifyCeiling } from './verify-ceiling'

// ---------------------------------------------------------------- options

const argv = process.argv.slice(2)
const flag = (name: string) => argv.includes(`--${name}`)
const option = (name: string) => {
  const i = argv.indexOf(`--${name}`)
  return i >= 0 ? argv[i + 1] : undefined
}
const quick = flag('quick')
const rounds = Number(option('rounds') ?? 3)
const SCENARIOS = [
  'ceiling',
  'ingest-closed',
  'ingest-pipelined',
  'ingest-pinned',
  'store',
  'fanout',
  'channel-fanout',
  'slow-read',
  'req',
  'ingest-with-reads',
  'idle-memory',
  'agents',
  'cluster-fanout',
  'admission',
  'ingest-pg',
  'store-pg',
  'mesh',
] as const
const CLUSTER_SCENARIOS: readonly Scenario[] = ['cluster-fanout', 'admission', 'ingest-pg', 'store-pg', 'mesh']
type Scenario = (typeof SCENARIOS)[number]
type Target = { text: string; check: (apiary: number, baseline: number | string) => boolean }
const only = option('only')?.split(',') as Scenario[] | undefined
for (const s of only ?? []) if (!SCENARIOS.includes(s)) throw new Error(`unknown scenario ${s}; known: ${SCENARIOS.join(', ')}`)
const wanted = (s: Scenario) => !only || only.includes(s) || (s === 'ceiling' && only.includes('ingest-pipelined'))
type RelayName = 'apiary' | 'baseline'
const relayNames = (option('relays')?.split(',') ?? ['apiary', 'baseline']) as RelayName[]
/** load processes the agents scenario spreads its fleet over (bench/agent-shard.ts), besides its probe */
const agentShards = Number(option('agent-shards') ?? 3)

const size = quick
  ? {
      ceilingEvents: 1_000,
      corpus: { events: 4_000, maxSeconds: 8 },
      store: { events: 4_000, batches: [64, 400] },
      fanout: { subscribers: 1_000, events: 100 },
      slowRead: { events: 4_000, connections: 4, window: 16, maxSeconds: 10, delayMs: 2_000 },
      req: { stored: 10_000, queries: 50, concurrentQueries: 200, connections: 8 },
      ingestWithReads: { events: 3_000, connections: 4, window: 200, maxSeconds: 10, readers: 8 },
      idle: { connections: 1_000 },
      agents: {
        agents: 300,
        shards: agentShards,
        waveSize: 50,
        waveSpacingMs: 20,
        probeHandshakes: 60,
        probeIntervalMs: 100,
        subscribers: 20,
        trafficPublishers: 5,
        trafficIntervalMs: 2_000,
        stormPublishers: 30,
        recoveryTimeoutMs: 180_000,
        shapedMaxConcurrentAuth: 32,
      },
      clusterFanout: { subscribers: 200, events: 100 },
      admission: {
        seconds: 1,
        maxDecisions: 2_000_000,
        callers: [1, 16, 64],
        batches: [8, 32, 128],
        batchCallers: [1, 16],
        memoryCallers: 16,
      },
      ingestPg: { events: 3_000, connections: 4, window: 200, maxSeconds: 10 },
      storePg: { events: 4_000, batches: [64, 400] },
      mesh: { killTrials: 3, termTrials: 3, moderationEvents: 50, convergenceRuns: 1, tunnelRequests: 100, stallSeconds: 3 },
    }
  : {
      ceilingEvents: 4_000,
      // 30,000 corpus events: ~10 s at 3,000 ev/s; a slower relay stops at maxSeconds
      corpus: { events: 30_000, maxSeconds: 15 },
      // commits of 64 events (4×16 in flight) and of 400 (4×200): each variant ~5 s per batch size and round
      store: { events: 30_000, batches: [64, 400] },
      fanout: { subscribers: 1_000, events: 500 },
      slowRead: { events: 10_000, connections: 4, window: 16, maxSeconds: 20, delayMs: 2_000 },
      req: { stored: 100_000, queries: 200, concurrentQueries: 800, connections: 8 },
      ingestWithReads: { events: 30_000, connections: 4, window: 200, maxSeconds: 20, readers: 8 },
      idle: { connections: 2_000 },
      // the load processes sign (~0.25 ms here, src/protocols/bip340.ts) and verify every inbound event with
      // noble (~1.4 ms): 3,000 heartbeating agents alone keep ~0.1 core of them busy (~0.5 with noble's sign),
      // so the fleet starts at 50 handshakes/s, only a sample of agents subscribes, and the steady handshake is the probe's (10/s, a process doing nothing else)
      agents: {
        agents: 3_000,
        shards: agentShards,
        waveSize: 50,
        waveSpacingMs: 20,
        probeHandshakes: 600,
        probeIntervalMs: 100,
        subscribers: 50,
        trafficPublishers: 10,
        trafficIntervalMs: 2_000,
        stormPublishers: 100,
        recoveryTimeoutMs: 180_000,
        shapedMaxConcurrentAuth: 32,
      },
      clusterFanout: { subscribers: 200, events: 500 },
      admission: {
        seconds: 3,
        maxDecisions: 10_000_000,
        callers: [1, 16, 64],
        batches: [8, 32, 128],
        batchCallers: [1, 16],
        memoryCallers: 16,
      },
      ingestPg: { events: 30_000, connections: 4, window: 200, maxSeconds: 20 },
      // as `store`: commits of 64 and of 400 events; each variant ~2–4 s per batch size and round
      storePg: { events: 30_000, batches: [64, 400] },
      // a round is ~5½ min: each SIGKILL trial waits out the lease (4–6 s), then a replacement node starts and links
      mesh: { killTrials: 20, termTrials: 20, moderationEvents: 200, convergenceRuns: 3, tunnelRequests: 500, stallSeconds: 10 },
    }

const log = (s: string) => process.stderr.write(`${s}\n`)
const median = (xs: number[]) => {
  const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b)
  if (v.length === 0) return Number.NaN
  const m = Math.floor(v.length / 2)
  return v.length % 2 ? v[m]! : (v[m - 1]! + v[m]!) / 2
}

// ---------------------------------------------------------------- relays

const tmpRoot = join(os.tmpdir(), `apiary-bench-${process.pid}`)
mkdirSync(tmpRoot, { recursive: true })
process.on('exit', () => rmSync(tmpRoot, { recursive: true, force: true }))
const freshDir = (label: string) => mkdtempSync(join(tmpRoot, `${label}-`))

/** `env` goes to the child (bench/serve-apiary.ts reads BENCH_APIARY_CONFIG and BENCH_SLOW_READ_MS). */
async function withRelay<T>(
  name: RelayName,
  dir: string,
  fn: (relay: RelayProcess) => Promise<T>,
  env: Record<string, string> = {},
): Promise<T> {
  const relay = await spawnRelay(CHILD_SCRIPTS[name], dir, 60_000, env)
  try {
    return await fn(relay)
  } finally {
    await relay.close()
  }
}

type Outcome<T> = { ok: true; value: T } | { ok: false; error: string }

/** Each relay's REQ data-set directory, loaded once per run (`req` reads it, `ingest-with-reads` copies it). */
const preloaded = new Map<RelayName, Promise<string>>()
function preloadOnce(name: RelayName, ds: Dataset): Promise<string> {
  let dir = preloaded.get(name)
  if (!dir) {
    dir = preload(name, ds)
    preloaded.set(name, dir)
  }
  return dir
}

async function attempt<T>(fn: () => Promise<T>): Promise<Outcome<T>> {
  try {
    return { ok: true, value: await fn() }
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) }
  }
}

/** One round = each variant once, order alternating per round (A,B then B,A). */
async function alternateVariants<V extends string, T>(
  label: string,
  variants: readonly V[],
  run: (variant: V, round: number) => Promise<T>,
): Promise<Record<V, Outcome<T>[]>> {
  const out = Object.fromEntries(variants.map((v) => [v, []])) as unknown as Record<V, Outcome<T>[]>
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? variants : [...variants].reverse()
    for (const variant of order) {
      log(`  ${label}: ${variant} round ${round + 1}/${rounds}`)
      const r = await attempt(() => run(variant, round))
      if (!r.ok) log(`    failed: ${r.error}`)
      out[variant].push(r)
    }
  }
  return out
}

/** One round = each relay once, order alternating per round; every run gets a fresh relay and data dir. */
async function alternate<T>(label: string, run: (name: RelayName, round: number) => Promise<T>): Promise<Record<RelayName, Outcome<T>[]>> {
  const out: Partial<Record<RelayName, Outcome<T>[]>> = await alternateVariants(label, relayNames, run)
  return { apiary: out.apiary ?? [], baseline: out.baseline ?? [] }
}

// ---------------------------------------------------------------- result table

interface Row {
  scenario: string
  metric: string
  unit: string
  apiary: number | string
  baseline: number | string
  /** apiary / baseline */
  ratio: number | null
  target: string
  met: boolean | null
}

const rows: Row[] = []
const raw: Record<string, unknown> = {}
const notes: string[] = []

function cell<T>(outcomes: Outcome<T>[], get: (v: T) => number): number | string {
  const ok = outcomes.filter((o): o is { ok: true; value: T } => o.ok)
  if (ok.length === 0) return outcomes.length ? `failed: ${(outcomes[0] as { error: string }).error.slice(0, 120)}` : 'skipped'
  return Math.round(median(ok.map((o) => get(o.value))) * 100) / 100
}

function addRow<T>(
  scenario: string,
  metric: string,
  unit: string,
  results: Record<RelayName, Outcome<T>[]>,
  get: (v: T) => number,
  target?: { text: string; check: (apiary: number, baseline: number | string) => boolean },
): void {
  const apiary = cell(results.apiary, get)
  const baseline = cell(results.baseline, get)
  const ratio =
    typeof apiary === 'number' && typeof baseline === 'number' && baseline !== 0 ? Math.round((apiary / baseline) * 100) / 100 : null
  rows.push({
    scenario,
    metric,
    unit,
    apiary,
    baseline,
    ratio,
    target: target?.text ?? '',
    met: target ? (typeof apiary === 'number' ? target.check(apiary, baseline) : false) : null,
  })
}

const atLeastTimesBaseline = (k: number) => atLeastTimes(k, 'baseline')

/** a target relative to this row's baseline column; `name` says what that column holds ("SQLite" in ingest-pg) */
function atLeastTimes(k: number, name: string) {
  return { text: `≥ ${k}× ${name}`, check: (a: number, b: number | string) => typeof b === 'number' && a >= k * b }
}

function atMostTimes(k: number, name: string) {
  return { text: `≤ ${k}× ${name}`, check: (a: number, b: number | string) => typeof b === 'number' && a <= k * b }
}

function noteOutcomes(label: string, results: Record<RelayName, Outcome<{ rejected?: Record<string, number>; incomplete?: string }>[]>) {
  for (const name of relayNames) {
    results[name].forEach((o, i) => {
      if (!o.ok) return
      const rej = Object.entries(o.value.rejected ?? {})
      if (rej.length) notes.push(`${label} ${name} r${i + 1}: not accepted ${rej.map(([k, v]) => `${k}=${v}`).join(' ')}`)
      if (o.value.incomplete) notes.push(`${label} ${name} r${i + 1}: incomplete (${o.value.incomplete})`)
    })
  }
}

/** Not-accepted counts and incomplete runs of a scenario whose rounds alternate variants, not relays. */
function noteVariantOutcomes<V extends string>(
  label: string,
  results: Record<V, Outcome<{ rejected: Record<string, number>; incomplete?: string }>[]>,
) {
  for (const [variant, outcomes] of Object.entries(results) as [
    V,
    Outcome<{ rejected: Record<string, number>; incomplete?: string }>[],
  ][]) {
    outcomes.forEach((o, i) => {
      if (!o.ok) return
      const rej = Object.entries(o.value.rejected)
      if (rej.length) notes.push(`${label} ${variant} r${i + 1}: not accepted ${rej.map(([k, n]) => `${k}=${n}`).join(' ')}`)
      if (o.value.incomplete) notes.push(`${label} ${variant} r${i + 1}: incomplete (${o.value.incomplete})`)
    })
  }
}

/** Hooks for a load generator's timed window: event-loop delay and CPU of the relay process over exactly that window. */
function probe(relay: RelayProcess) {
  let cpu0 = 0
  let t0 = 0
  const figures = { loopDelay: undefined as LoopDelay | undefined, relayCores: Number.NaN }
  return {
    figures,
    onStart: async () => {
      await relay.loopDelayStart()
      cpu0 = await relay.cpuMicros()
      t0 = performance.now()
    },
    onEnd: async () => {
      const cpu = await relay.cpuMicros()
      figures.relayCores = Math.round(((cpu - cpu0) / 1000 / (performance.now() - t0)) * 100) / 100
      figures.loopDelay = await relay.loopDelayStop()
    },
  }
}

type Probed<T> = T & { loopDelay: LoopDelay; relayCores: number }

async function probed<T>(
  relay: RelayProcess,
  run: (hooks: { onStart: () => Promise<void>; onEnd: () => Promise<void> }) => Promise<T>,
): Promise<Probed<T>> {
  const p = probe(relay)
  const r = await run(p)
  return { ...r, loopDelay: p.figures.loopDelay!, relayCores: p.figures.relayCores }
}

function cpuRows<T extends { loadGenCores: number }>(label: string, results: Record<RelayName, Outcome<Probed<T>>[]>) {
  addRow(label, 'relay CPU (all threads)', 'cores', results, (r) => r.relayCores)
  addRow(label, 'load-generator CPU', 'cores', results, (r) => r.loadGenCores)
}

// ---------------------------------------------------------------- scenarios

const machine = {
  cpu: os.cpus()[0]?.model ?? 'unknown',
  cores: os.cpus().length,
  memoryGiB: Math.round(os.totalmem() / 2 ** 30),
  loadavg: os.loadavg().map((x) => Math.round(x * 100) / 100),
  node: process.version,
  platform: `${os.platform()} ${os.release()}`,
  date: new Date().toISOString(),
  mode: quick ? 'quick' : 'full',
  rounds,
}
console.log(`machine: ${machine.cpu} × ${machine.cores} cores, ${machine.memoryGiB} GiB, ${machine.platform}`)
console.log(`node ${machine.node}, ${machine.date}, load avg ${machine.loadavg.join(' ')}, ${machine.mode} mode, ${rounds} round(s)`)

// The cluster scenarios run only when Redis and PostgreSQL answer (explicitly asked for or not).
let clusterSkipped: string | undefined
if (CLUSTER_SCENARIOS.some(wanted)) {
  clusterSkipped = await clusterUnavailable()
  if (clusterSkipped) {
    log(`cluster scenarios skipped: ${clusterSkipped}`)
    notes.push(`cluster scenarios (${CLUSTER_SCENARIOS.filter(wanted).join(', ')}) skipped: ${clusterSkipped}`)
  }
}
const wantedCluster = (s: Scenario) => wanted(s) && clusterSkipped === undefined
if (CLUSTER_SCENARIOS.some(wantedCluster)) {
  // an interrupted run still drops its databases (its relay children get the same signal from the terminal)
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      log(`${signal}: dropping bench databases`)
      void dropBenchDatabases().finally(() => process.exit(130))
    })
  }
}

// Sign everything before any clock starts (cached in .bench-data/fixtures/).
log('setup: fixtures')
const maxIngest = Math.max(
  size.fanout.events,
  size.slowRead.events,
  size.ingestWithReads.events,
  size.clusterFanout.events,
  size.ingestPg.events,
)
const ingestScenarios: Scenario[] = ['fanout', 'slow-read', 'ingest-with-reads']
const corpusScenarios: Scenario[] = ['ingest-closed', 'ingest-pipelined', 'ingest-pinned', 'store', 'ingest-pg', 'store-pg']
const corpus = corpusScenarios.some(wanted) ? corpusEvents(size.corpus.events) : undefined
if (corpus) notes.push(`ingest corpus (bench/corpus.ts): ${describeCorpus(corpus)}`)
if (ingestScenarios.some(wanted) || wantedCluster('cluster-fanout') || wantedCluster('ingest-pg')) ingestEvents(maxIngest)
if (wantedCluster('ingest-pg')) channelPostEvents(size.ingestPg.events)
let dataset: Dataset | undefined
if (wanted('req') || wanted('ingest-with-reads')) dataset = reqDataset(size.req.stored)
let channelFx: ChannelFixtures | undefined
if (wanted('channel-fanout')) channelFx = channelFixtures(size.fanout)

let ceiling: VerifyCeiling | undefined
if (wanted('ceiling')) {
  log('ceiling: verifier pool (bench/verify-ceiling.ts)')
  const r = await attempt(async () => {
    const { measureVerifyCeiling } = await import('./verify-ceiling')
    return measureVerifyCeiling({ events: corpus?.slice(0, size.ceilingEvents) ?? size.ceilingEvents, threads: 2 })
  })
  if (r.ok) {
    ceiling = r.value
    rows.push(
      {
        scenario: 'verify ceiling',
        metric: `pool (${r.value.threads} threads, ${r.value.backend}, as the relay runs it)`,
        unit: 'ev/s',
        apiary: r.value.poolPerSec,
        baseline: '',
        ratio: null,
        target: '',
        met: null,
      },
      {
        scenario: 'verify ceiling',
        metric: `pool (${r.value.threads} threads, wasm)`,
        unit: 'ev/s',
        apiary: r.value.wasmPoolPerSec,
        baseline: '',
        ratio: null,
        target: '',
        met: null,
      },
      {
        scenario: 'verify ceiling',
        metric: 'native inline',
        unit: 'ev/s',
        apiary: r.value.nativeInlinePerSec ?? 'addon not loaded',
        baseline: '',
        ratio: null,
        target: '',
        met: null,
      },
      {
        scenario: 'verify ceiling',
        metric: 'wasm inline',
        unit: 'ev/s',
        apiary: r.value.wasmInlinePerSec,
        baseline: '',
        ratio: null,
        target: '',
        met: null,
      },
      {
        scenario: 'verify ceiling',
        metric: 'noble inline',
        unit: 'ev/s',
        apiary: '',
        baseline: r.value.nobleInlinePerSec,
        ratio: null,
        target: '',
        met: null,
      },
    )
  } else
    rows.push({
      scenario: 'verify ceiling',
      metric: 'pool',
      unit: 'ev/s',
      apiary: `failed: ${r.error}`,
      baseline: '',
      ratio: null,
      target: '',
      met: null,
    })
  raw.ceiling = r
}

const corpusRows = (
  label: string,
  results: Record<RelayName, Outcome<CorpusIngestResult>[]>,
  targets: { rate?: Target; latencyP99?: Target } = {},
) => {
  addRow(label, 'accepted', 'ev/s', results, (r) => r.eventsPerSec, targets.rate)
  addRow(label, 'OK latency p50', 'ms', results, (r) => r.okLatency.p50Ms)
  addRow(label, 'OK latency p99', 'ms', results, (r) => r.okLatency.p99Ms, targets.latencyP99)
  addRow(label, 'relay CPU per accepted event (all threads)', 'µs', results, (r) => r.cpuPerEventUs, {
    text: '≤ 350 µs',
    check: (a) => a <= 350,
  })
  addRow(label, "event loop's share of relay CPU", 'share', results, (r) => r.mainThreadShare)
  addRow(label, 'relay CPU (all threads)', 'cores', results, (r) => r.relayCores)
  addRow(label, 'event-loop delay p99', 'ms', results, (r) => r.loopDelay.p99Ms, { text: '≤ 20 ms', check: (a) => a <= 20 })
  addRow(label, 'load-generator CPU', 'cores', results, (r) => r.loadGenCores)
}
const ofCeiling = (share: number): Target | undefined =>
  ceiling
    ? { text: `≥ ${share * 100}% of ceiling ${ceiling.poolPerSec} (${ceiling.backend})`, check: (a) => a >= share * ceiling!.poolPerSec }
    : undefined
const corpusRun = (shape: CorpusShape) => (name: RelayName) =>
  withRelay(name, freshDir(name), (relay) => corpusIngest(relay, corpus!, shape, size.corpus.maxSeconds))

if (wanted('ingest-pinned') && corpus) {
  const results = await alternate('ingest-pinned', corpusRun({ connections: 4, window: 16, pinned: true }))
  raw['ingest-pinned'] = results
  corpusRows('ingest corpus 4×16, relay pinned to one core', results, { rate: atLeastTimesBaseline(20) })
  noteOutcomes('ingest-pinned', results)
  notes.push('ingest-pinned: every thread of the relay on CPU 0 (taskset -a), the load generator on CPU 1')
}

if (wanted('store') && corpus) {
  for (const batch of size.store.batches) {
    const results = await alternateVariants(`store (${batch}-event commits)`, Object.keys(STORE_VARIANTS) as StoreVariant[], (v) =>
      storeCost(v, size.store.events, batch),
    )
    raw[`store-${batch}`] = results
    const label = `SQLite store alone, corpus, ${batch}-event commits`
    for (const [variant, outcomes] of Object.entries(results) as [StoreVariant, Outcome<StoreCost>[]][]) {
      const shipped = variant === 'as shipped'
      addOneSided(label, `${variant}: commit CPU per event`, 'µs', outcomes, (r) => r.commitUs)
      addOneSided(
        label,
        `${variant}: commit + checkpoint CPU per event`,
        'µs',
        outcomes,
        (r) => r.commitUs + r.checkpointUs,
        shipped ? { text: '≤ 60 µs', check: (a) => a <= 60 } : undefined,
      )
      if (shipped || variant === '− every tag row')
        addOneSided(label, `${variant}: bytes written per event`, 'B', outcomes, (r) => r.writtenBytes)
    }
    if (batch === size.store.batches[0])
      addOneSided(label, 'SavePlan on the event loop per event', 'µs', results['as shipped'], (r) => r.planUs)
  }
  notes.push(
    `store: bench/store-cost.ts, one process per measurement: a fresh file with the shipped schema, one change (the variant), the corpus committed by the writer thread's write runner; checkpoints PASSIVE every ${CHECKPOINT_INTERVAL_MS} ms (as the checkpoint worker) from a second connection; "−" variants show what an index costs, not a schema to ship`,
  )
}

if (wanted('ingest-closed') && corpus) {
  const results = await alternate('ingest-closed', corpusRun({ connections: 16, window: 1 }))
  raw['ingest-closed'] = results
  corpusRows('ingest corpus closed-loop (16 conns)', results)
  noteOutcomes('ingest-closed', results)
}

if (wanted('ingest-pipelined') && corpus) {
  const results = await alternate('ingest-pipelined', async (name) => {
    const shallow = await corpusRun({ connections: 4, window: 16 })(name)
    const deep = await corpusRun({ connections: 4, window: 200 })(name)
    // open loop at half the deepest rate this relay reached in this round
    const half = await corpusRun({
      connections: 4,
      window: 0,
      ratePerSec: Math.max(1, Math.round(Math.max(shallow.eventsPerSec, deep.eventsPerSec) / 2)),
    })(name)
    return { shallow, deep, half }
  })
  raw['ingest-pipelined'] = results
  const part = <K extends 'shallow' | 'deep' | 'half'>(k: K) =>
    Object.fromEntries(
      Object.entries(results).map(([n, os]) => [n, os.map((o) => (o.ok ? { ok: true, value: o.value[k] } : o))]),
    ) as Record<RelayName, Outcome<CorpusIngestResult>[]>
  corpusRows('ingest corpus pipelined 4×16', part('shallow'), { rate: ofCeiling(0.5) })
  corpusRows('ingest corpus pipelined 4×200', part('deep'), { rate: ofCeiling(0.7) })
  corpusRows('ingest corpus open loop at half the max rate', part('half'), { latencyP99: { text: '≤ 50 ms', check: (a) => a <= 50 } })
  for (const k of ['shallow', 'deep', 'half'] as const) noteOutcomes(`ingest-pipelined ${k}`, part(k))
  notes.push(
    'ingest-pipelined: each round runs 4×16, then 4×200, then an open loop (4 connections, round robin) at half the higher of the two rates, each on a fresh relay',
  )
}

if (wanted('fanout')) {
  const results = await alternate('fanout', (name) =>
    withRelay(name, freshDir(name), (relay) => probed(relay, (hooks) => fanout(relay.url, { ...size.fanout, ...hooks }))),
  )
  raw.fanout = results
  const label = `fan-out (${size.fanout.subscribers} subs × ${size.fanout.events} ev)`
  addRow(label, 'deliveries', '/s', results, (r) => r.deliveriesPerSec, { text: '≥ 100,000/s', check: (a) => a >= 100_000 })
  addRow(label, 'deliveries vs baseline', '/s', results, (r) => r.deliveriesPerSec, atLeastTimesBaseline(3))
  addRow(label, 'publish→delivery p50', 'ms', results, (r) => r.delivery.p50Ms)
  addRow(label, 'publish→delivery p99', 'ms', results, (r) => r.delivery.p99Ms)
  addRow(label, 'deliveries received', 'count', results, (r) => r.deliveries)
  addRow(label, 'event-loop delay p99', 'ms', results, (r) => r.loopDelay.p99Ms)
  cpuRows(label, results)
  noteOutcomes('fanout', results)
}

if (wanted('channel-fanout') && channelFx && !relayNames.includes('apiary')) notes.push('channel-fanout skipped: it runs Apiary only')
else if (wanted('channel-fanout') && channelFx) {
  const fx = channelFx
  const results = await alternateVariants('channel-fanout', CHANNEL_VARIANTS, (variant) =>
    withRelay('apiary', freshDir('apiary'), (relay) => probed(relay, (hooks) => channelFanout(relay.url, variant, fx, hooks))),
  )
  raw['channel-fanout'] = results
  const label = `channel fan-out (${size.fanout.subscribers} authed subs × ${size.fanout.events} ev)`
  for (const v of ['public channel', 'private channel'] as const) {
    const vs = { apiary: results[v], baseline: results.plain }
    addRow(label, `${v}: deliveries`, '/s', vs, (r) => r.deliveriesPerSec)
    addRow(label, `${v}: publish→delivery p50`, 'ms', vs, (r) => r.delivery.p50Ms)
    addRow(label, `${v}: publish→delivery p99`, 'ms', vs, (r) => r.delivery.p99Ms)
    addRow(label, `${v}: deliveries received`, 'count', vs, (r) => r.deliveries)
    addRow(label, `${v}: relay CPU (all threads)`, 'cores', vs, (r) => r.relayCores)
  }
  const setupS = median(results['private channel'].flatMap((o) => (o.ok ? [o.value.setupMs / 1000] : [])))
  notes.push(
    `channel-fanout: Apiary only. Apiary column = kind 9 to a public / private channel, baseline column = plain kind 1 (no h tag), A/B = channel ÷ plain; same relay kind (embedded SQLite), every subscriber NIP-42-authenticated and (both channels) a member; channel rows include NIP-29's per-post write check; set-up (9007 + ${fx.channels['private channel'].setup.length - 1} put-users, median ${setupS.toFixed(1)} s) is not timed`,
  )
  for (const v of CHANNEL_VARIANTS) {
    results[v].forEach((o, i) => {
      if (!o.ok) return
      const rej = Object.entries(o.value.rejected)
      if (rej.length) notes.push(`channel-fanout ${v} r${i + 1}: not accepted ${rej.map(([k, n]) => `${k}=${n}`).join(' ')}`)
      if (o.value.incomplete) notes.push(`channel-fanout ${v} r${i + 1}: incomplete (${o.value.incomplete})`)
      if (o.value.closedSubscribers)
        notes.push(`channel-fanout ${v} r${i + 1}: ${o.value.closedSubscribers} subscribers closed by the relay`)
    })
  }
}

if (wanted('slow-read') && !relayNames.includes('apiary')) notes.push('slow-read skipped: it runs Apiary only')
else if (wanted('slow-read')) {
  const { delayMs, ...load } = size.slowRead
  const events = ingestEvents(load.events)
  const env = { BENCH_SLOW_READ_MS: String(delayMs) }
  const results = await alternateVariants('slow-read', SLOW_READ_VARIANTS, (variant) =>
    withRelay(
      'apiary',
      freshDir('apiary'),
      (relay) => probed(relay, (hooks) => slowReadIngest(relay.url, variant, { ...load, events, ...hooks })),
      env,
    ),
  )
  raw['slow-read'] = results
  const label = `slow read (ingest ${load.connections}×${load.window}, a REQ held ${delayMs / 1000} s in the store)`
  const vs = { apiary: results['with slow REQ'], baseline: results['without slow REQ'] }
  addRow(label, 'accepted', 'ev/s', vs, (r) => r.eventsPerSec)
  addRow(label, 'OK latency p50', 'ms', vs, (r) => r.okLatency.p50Ms)
  addRow(label, 'OK latency p99', 'ms', vs, (r) => r.okLatency.p99Ms, atMostTimes(1.5, 'without'))
  addRow(label, 'event-loop delay p99', 'ms', vs, (r) => r.loopDelay.p99Ms)
  addOneSided(label, 'slow REQs answered', 'count', vs.apiary, (r) => r.slowReqs)
  addOneSided(label, 'slow REQ→EOSE p50', 'ms', vs.apiary, (r) => r.slowReqLatency.p50Ms)
  notes.push(
    `slow-read: Apiary only, the store delays queries marked #t:["bench-slow"] by ${delayMs} ms (bench/slow-read-store.ts). Apiary column = ingest while one connection keeps one marked REQ in flight (CLOSE and re-send on each EOSE), baseline column = the same ingest without it; A/B = with ÷ without`,
  )
  noteVariantOutcomes('slow-read', results)
}

if (wanted('req') && dataset) {
  const ds = dataset
  // Pre-load each relay's data set once; every round then starts a fresh process on that directory.
  const dirs: Partial<Record<RelayName, Outcome<string>>> = {}
  for (const name of relayNames) {
    log(`  req: pre-loading ${ds.events.length} events into ${name}`)
    dirs[name] = await attempt(() => preloadOnce(name, ds))
    if (!dirs[name]!.ok) log(`    failed: ${(dirs[name] as { error: string }).error}`)
  }
  const results = await alternate('req', async (name) => {
    const dir = dirs[name]!
    if (!dir.ok) throw new Error(`pre-load: ${dir.error}`)
    return withRelay(name, dir.value, (relay) =>
      reqLatency(relay.url, {
        dataset: ds,
        queries: size.req.queries,
        concurrentQueries: size.req.concurrentQueries,
        connections: size.req.connections,
        onConcurrent: async () => {
          const cpu0 = await relay.cpuMicros()
          const t0 = performance.now()
          return async () => Math.round((((await relay.cpuMicros()) - cpu0) / 1000 / (performance.now() - t0)) * 100) / 100
        },
      }),
    )
  })
  raw.req = results
  for (const shape of REQ_SHAPES) {
    const get = (f: (r: ReqShapeResult) => number) => (rs: ReqShapeResult[]) => f(rs.find((r) => r.shape === shape)!)
    const label = `REQ ${shape} (${ds.events.length} stored)`
    addRow(
      label,
      'sequential p50',
      'ms',
      results,
      get((r) => r.sequential.latency.p50Ms),
    )
    addRow(
      label,
      'sequential p99',
      'ms',
      results,
      get((r) => r.sequential.latency.p99Ms),
      { text: '≤ 10 ms', check: (a) => a <= 10 },
    )
    addRow(
      label,
      `concurrent (${size.req.connections} conns)`,
      'q/s',
      results,
      get((r) => r.concurrent.queriesPerSec),
      atLeastTimesBaseline(2),
    )
    addRow(
      label,
      'concurrent p99',
      'ms',
      results,
      get((r) => r.concurrent.latency.p99Ms),
    )
    addRow(
      label,
      'concurrent relay CPU',
      'cores',
      results,
      get((r) => r.concurrentProbe ?? Number.NaN),
    )
    addRow(
      label,
      'events per query',
      'mean',
      results,
      get((r) => r.sequential.meanEvents),
    )
  }
}

if (wanted('ingest-with-reads') && dataset && !relayNames.includes('apiary')) notes.push('ingest-with-reads skipped: it runs Apiary only')
else if (wanted('ingest-with-reads') && dataset) {
  const ds = dataset
  const opts = { ...size.ingestWithReads, dataset: ds, events: ingestEvents(size.ingestWithReads.events) }
  log(`  ingest-with-reads: pre-loading ${ds.events.length} events into apiary (shared with req)`)
  const loaded = await attempt(() => preloadOnce('apiary', ds))
  const results = await alternateVariants('ingest-with-reads', READ_LOAD_VARIANTS, async (variant) => {
    if (!loaded.ok) throw new Error(`pre-load: ${loaded.error}`)
    // every run ingests into its own copy: the events it adds must not be there already in the next round
    const dir = freshDir('apiary-reads')
    cpSync(loaded.value, dir, { recursive: true })
    const env: Record<string, string> = isUnreniced(variant) ? { BENCH_APIARY_CONFIG: JSON.stringify(UNRENICED_CONFIG) } : {}
    return withRelay('apiary', dir, (relay) => probed(relay, (hooks) => ingestWithReads(relay.url, variant, { ...opts, ...hooks })), env)
  })
  raw['ingest-with-reads'] = results
  const label = `ingest ${opts.connections}×${opts.window} + ${opts.readers} readers (${ds.events.length} stored)`
  const vs = { apiary: results['ingest + readers'], baseline: results['ingest alone'] }
  const readers = (f: (x: ReadersFigures) => number) => (r: ReadLoadResult) => (r.readers ? f(r.readers) : Number.NaN)
  addRow(label, 'accepted', 'ev/s', vs, (r) => r.eventsPerSec)
  addRow(label, 'OK latency p99', 'ms', vs, (r) => r.okLatency.p99Ms)
  addRow(label, 'event-loop delay p50', 'ms', vs, (r) => r.loopDelay.p50Ms)
  addRow(label, 'event-loop delay p99', 'ms', vs, (r) => r.loopDelay.p99Ms, { text: '≤ 20 ms', check: (a) => a <= 20 })
  addRow(label, 'event-loop delay max', 'ms', vs, (r) => r.loopDelay.maxMs)
  addOneSided(
    label,
    'REQ→EOSE p50',
    'ms',
    vs.apiary,
    readers((x) => x.latency.p50Ms),
  )
  addOneSided(
    label,
    'REQ→EOSE p99',
    'ms',
    vs.apiary,
    readers((x) => x.latency.p99Ms),
  )
  for (const shape of READER_SHAPES)
    addOneSided(
      label,
      `REQ ${shape} p99`,
      'ms',
      vs.apiary,
      readers((x) => x.byShape[shape].p99Ms),
    )
  addOneSided(
    label,
    'REQs answered',
    'q/s',
    vs.apiary,
    readers((x) => x.queriesPerSec),
  )
  addOneSided(
    label,
    'events per REQ',
    'mean',
    vs.apiary,
    readers((x) => x.meanEvents),
  )
  addRow(label, 'relay CPU (all threads)', 'cores', vs, (r) => r.relayCores)
  addRow(label, 'load-generator CPU', 'cores', vs, (r) => r.loadGenCores)
  const reniceAlone = { apiary: results['ingest alone'], baseline: results['ingest alone, workers not reniced'] }
  const reniceAloneLabel = 'ingest alone: workers reniced vs not'
  addRow(reniceAloneLabel, 'accepted', 'ev/s', reniceAlone, (r) => r.eventsPerSec)
  addRow(reniceAloneLabel, 'OK latency p99', 'ms', reniceAlone, (r) => r.okLatency.p99Ms)
  addRow(reniceAloneLabel, 'event-loop delay p99', 'ms', reniceAlone, (r) => r.loopDelay.p99Ms)
  addRow(reniceAloneLabel, 'relay CPU (all threads)', 'cores', reniceAlone, (r) => r.relayCores)
  const renice = { apiary: results['ingest + readers'], baseline: results['ingest + readers, workers not reniced'] }
  const reniceLabel = `ingest + ${opts.readers} readers: workers reniced vs not`
  addRow(reniceLabel, 'accepted', 'ev/s', renice, (r) => r.eventsPerSec)
  addRow(reniceLabel, 'OK latency p99', 'ms', renice, (r) => r.okLatency.p99Ms)
  addRow(reniceLabel, 'event-loop delay p99', 'ms', renice, (r) => r.loopDelay.p99Ms)
  addRow(
    reniceLabel,
    'REQ→EOSE p99',
    'ms',
    renice,
    readers((x) => x.latency.p99Ms),
  )
  addRow(
    reniceLabel,
    'REQs answered',
    'q/s',
    renice,
    readers((x) => x.queriesPerSec),
  )
  addRow(reniceLabel, 'relay CPU (all threads)', 'cores', renice, (r) => r.relayCores)
  notes.push(
    `ingest-with-reads, reniced vs not: Apiary column = the run with the default threads.* (workers nice +5, readers +10); baseline column = the same run with ${JSON.stringify(UNRENICED_CONFIG)} (every thread at the event loop's priority)`,
  )
  notes.push(
    `ingest-with-reads: Apiary only (embedded SQLite holding the REQ data set, a fresh copy per run). Apiary column = pipelined ingest while ${opts.readers} connections run ${READER_SHAPES.join(', ')} REQs in a closed loop; baseline column = the same ingest alone; REQ rows count what was answered inside the timed window`,
  )
  noteVariantOutcomes('ingest-with-reads', results)
  for (const o of results['ingest + readers'])
    if (o.ok && o.value.readers?.refused) notes.push(`ingest-with-reads: ${o.value.readers.refused} REQs refused (CLOSED)`)
}

if (wanted('idle-memory')) {
  const results = await alternate('idle-memory', (name) =>
    withRelay(name, freshDir(name), (relay): Promise<IdleMemoryResult> => idleConnectionMemory(relay.url, size.idle, () => relay.memory())),
  )
  raw['idle-memory'] = results
  const label = `idle connections (${size.idle.connections})`
  addRow(label, 'heap+external per conn', 'KiB', results, (r) => r.heapPerConnection / 1024, { text: '≤ 16 KiB', check: (a) => a <= 16 })
  addRow(label, 'rss per conn', 'KiB', results, (r) => r.rssPerConnection / 1024)
}

if (wanted('agents') && !relayNames.includes('apiary')) notes.push('agents skipped: it runs Apiary only')
else if (wanted('agents')) {
  const o = size.agents
  const runs: Outcome<AgentsResult>[] = []
  for (let round = 0; round < rounds; round++) {
    log(`  agents: ${o.agents} agents, round ${round + 1}/${rounds}`)
    const r = await attempt(() => agentsStorm({ ...o, dir: freshDir('apiary-agents') }))
    if (!r.ok) log(`    failed: ${r.error}`)
    else
      log(
        `    all ACTIVE again ${r.value.storm.allActiveSeconds} s after the restart; steady handshake p99 ${r.value.handshake.steady.startToActive.p99Ms} ms (probe)`,
      )
    runs.push(r)
  }
  raw.agents = runs
  addAgentsRows(o, runs)
}

function addAgentsRows(o: (typeof size)['agents'], runs: Outcome<AgentsResult>[]) {
  const label = `agents (${o.agents} AgentClients, ${o.shards} load processes + probe)`
  const atMost = (k: number, unit: string) => ({ text: `≤ ${k}${unit}`, check: (a: number) => a <= k })
  const none = { text: '0', check: (a: number) => a === 0 }
  const worst = (loads: ShardLoad[]) => Math.max(...loads.map((l) => l.loopDelay.p99Ms))
  addOneSided(label, 'agents ACTIVE at the end', 'count', runs, (r) => r.active, { text: `${o.agents}`, check: (a) => a === o.agents })
  addOneSided(label, 'handshake start→ACTIVE p50, steady (probe)', 'ms', runs, (r) => r.handshake.steady.startToActive.p50Ms)
  addOneSided(
    label,
    'handshake start→ACTIVE p99, steady (probe)',
    'ms',
    runs,
    (r) => r.handshake.steady.startToActive.p99Ms,
    atMost(25, ' ms'),
  )
  addOneSided(label, 'handshake socket→ACTIVE p99, steady (probe)', 'ms', runs, (r) => r.handshake.steady.socketToActive.p99Ms)
  addOneSided(label, '  of which socket + AUTH p99, steady', 'ms', runs, (r) => r.handshake.steady.auth.p99Ms)
  addOneSided(label, '  of which registration p99, steady', 'ms', runs, (r) => r.handshake.steady.register.p99Ms)
  addOneSided(label, 'relay-side open→AUTH OK p50, steady', 'ms ≤', runs, (r) => r.handshake.relaySideP50Ms)
  addOneSided(label, 'relay-side open→AUTH OK p99, steady', 'ms ≤', runs, (r) => r.handshake.relaySideP99Ms)
  addOneSided(label, 'probe-process loop delay p99, steady', 'ms', runs, (r) => r.probeLoad.loopDelay.p99Ms)
  addOneSided(label, 'probe-process loop delay max, steady', 'ms', runs, (r) => r.probeLoad.loopDelay.maxMs)
  addOneSided(label, 'probe-process CPU, steady', 'cores', runs, (r) => r.probeLoad.cores)
  addOneSided(label, 'handshake start→ACTIVE p99, fleet waves 2nd half', 'ms', runs, (r) => r.handshake.wavesSecondHalf.startToActive.p99Ms)
  addOneSided(label, 'handshake start→ACTIVE p99, all waves', 'ms', runs, (r) => r.handshake.waves.startToActive.p99Ms)
  addOneSided(label, 'load-process loop delay p99, steady (worst shard)', 'ms', runs, (r) => worst(r.shardLoad.steady))
  for (let k = 0; k < o.shards; k++) {
    const shard = `load shard ${k + 1}`
    addOneSided(label, `${shard}: loop delay p99, start-up`, 'ms', runs, (r) => r.shardLoad.startup[k]!.loopDelay.p99Ms)
    addOneSided(label, `${shard}: loop delay p99, steady`, 'ms', runs, (r) => r.shardLoad.steady[k]!.loopDelay.p99Ms)
    addOneSided(label, `${shard}: CPU, start-up`, 'cores', runs, (r) => r.shardLoad.startup[k]!.cores)
    addOneSided(label, `${shard}: CPU, steady`, 'cores', runs, (r) => r.shardLoad.steady[k]!.cores)
  }
  addOneSided(label, 'relay loop delay p99, steady', 'ms', runs, (r) => r.relayLoopDelay.p99Ms)
  addOneSided(label, 'relay loop delay max, steady', 'ms', runs, (r) => r.relayLoopDelay.maxMs)
  addOneSided(label, 'relay GC pauses ≥ 10 ms, steady', 'count', runs, (r) => r.relayLoopDelay.gc?.over10Ms ?? 0)
  addOneSided(label, 'relay GC pause max, steady', 'ms', runs, (r) => r.relayLoopDelay.gc?.maxMs ?? 0)
  addOneSided(label, 'relay GC pauses total, steady', 'ms', runs, (r) => r.relayLoopDelay.gc?.totalMs ?? 0)
  addOneSided(label, 'relay rss per agent', 'KiB', runs, (r) => r.memory.rssPerAgent / 1024)
  addOneSided(label, 'relay heap+external per agent', 'KiB', runs, (r) => r.memory.heapPerAgent / 1024)
  addOneSided(label, 'steady: relay CPU (heartbeats, traffic)', 'cores', runs, (r) => r.steady.relayCores)
  addOneSided(label, 'steady: load-generator CPU', 'cores', runs, (r) => r.steady.loadGenCores)
  addOneSided(label, 'traffic: deliveries to the apps', 'count', runs, (r) => r.traffic.deliveries)
  addOneSided(label, 'traffic: duplicates delivered', 'count', runs, (r) => r.traffic.duplicates, none)
  addOneSided(label, 'traffic: deliveries missing', 'count', runs, (r) => r.traffic.missing, none)
  addStormRows(label, 'storm', o, runs, (r) => r.storm)
  if (o.shapedMaxConcurrentAuth > 0) {
    addStormRows(label, `storm, maxConcurrentAuth ${o.shapedMaxConcurrentAuth}`, o, runs, (r) => r.shapedStorm)
  }
  notes.push(
    `agents: Apiary only (embedded SQLite, rate limits wide open, maxConnectionsPerIp lifted; presence 15 s / 45 s, client defaults). ${o.agents} AgentClients from dist/client over ${o.shards} load processes (bench/agent-shard.ts; open-files limit ${openFilesLimit()}); started in waves of ${o.waveSize} over all of them, ${1000 / o.waveSpacingMs} starts/s in all, each process's part of a wave all ACTIVE before its next. "steady (probe)" = a further process that only does handshakes, ${o.probeHandshakes} (after 5 unmeasured warm-ups) at one start every ${o.probeIntervalMs} ms (open loop) while all ${o.agents} heartbeat and trade jobs; its own loop delay is beside it. "start→ACTIVE" = start() to ACTIVE (NIP-11 and the socket opening side by side, AUTH, 31990 + first heartbeat OK); "socket→ACTIVE" from DISCOVERED (NIP-11 answered; the socket has been opening since start()). ${o.subscribers} agents subscribe to kind 5050 #t=bench-agents, ${o.trafficPublishers} publish one job every ${o.trafficIntervalMs} ms in turn until every agent has been ACTIVE 30 s (the client's stable period); then SIGKILL, ${o.stormPublishers} agents publish during the outage, restart on the same port and data dir${o.shapedMaxConcurrentAuth > 0 ? `; then, once all are past the stable period again, the same storm with limits.maxConcurrentAuth ${o.shapedMaxConcurrentAuth} (its lost / missing / duplicate figures cover every publish of the run)` : ''}`,
  )
}

/** a storm's rows and notes (a run without that storm gives NaN cells) */
function addStormRows(
  label: string,
  name: string,
  o: (typeof size)['agents'],
  runs: Outcome<AgentsResult>[],
  get: (r: AgentsResult) => StormFigures | undefined,
) {
  const row = (metric: string, unit: string, f: (s: StormFigures) => number, target?: { text: string; check: (a: number) => boolean }) =>
    addOneSided(
      label,
      `${name}: ${metric}`,
      unit,
      runs,
      (r) => {
        const s = get(r)
        return s ? f(s) : Number.NaN
      },
      target,
    )
  const none = { text: '0', check: (a: number) => a === 0 }
  row('outage (kill → listening again)', 's', (s) => s.outageMs / 1000)
  row('restart → all ACTIVE again', 's', (s) => s.allActiveSeconds, { text: '≤ 60 s', check: (a) => a <= 60 })
  row('restart → agent ACTIVE p50', 's', (s) => s.reactive.p50Ms / 1000)
  row('relay CPU (mean)', 'cores', (s) => s.relayCores)
  row('relay CPU (busiest second)', 'cores', (s) => s.relayPeakCores)
  row('load-generator CPU (all shards)', 'cores', (s) => s.loadGenCores)
  for (let k = 0; k < o.shards; k++) row(`load shard ${k + 1} loop delay p99`, 'ms', (s) => s.shardLoad[k]!.loopDelay.p99Ms)
  row('AUTHs shaped (relay /metrics)', 'count', (s) => s.shapedAuth)
  row('shaped refusals seen by agents', 'count', (s) => s.shapedSeen)
  row('reconnect attempts', 'count', (s) => s.reconnects)
  row('publishes resolved queued', 'count', (s) => s.publishedQueued)
  row('queued publishes lost', 'count', (s) => s.queuedLost, none)
  row('deliveries (traffic + outage jobs)', 'count', (s) => s.deliveries)
  row('duplicates delivered', 'count', (s) => s.duplicates, none)
  row('deliveries missing', 'count', (s) => s.missing, none)
  runs.forEach((r, i) => {
    const s = r.ok ? get(r.value) : undefined
    if (!s) return
    const causes = Object.entries(s.causes)
      .map(([k, n]) => `${k}=${n}`)
      .join(', ')
    notes.push(`agents r${i + 1} ${name}: failed attempts by cause: ${causes || 'none'}`)
    if (s.notQueued) notes.push(`agents r${i + 1} ${name}: ${s.notQueued} outage publishes did not resolve queued: true`)
    if (s.ackedLost) notes.push(`agents r${i + 1} ${name}: ${s.ackedLost} acknowledged publishes not stored`)
    if (s.missed.length) notes.push(`agents r${i + 1} ${name}: ${s.missing} deliveries missing, e.g. ${s.missed.join('; ')}`)
    if (s.notActive)
      notes.push(`agents r${i + 1} ${name}: ${s.notActive} agents not ACTIVE ${o.recoveryTimeoutMs / 1000} s after the restart`)
  })
}

// ---------------------------------------------------------------- cluster (bench/cluster.ts)

/** A row with one side only (the Apiary column). */
function addOneSided<T>(
  scenario: string,
  metric: string,
  unit: string,
  outcomes: Outcome<T>[],
  get: (v: T) => number,
  target?: { text: string; check: (apiary: number) => boolean },
) {
  const apiary = cell(outcomes, get)
  const met = target ? (typeof apiary === 'number' ? target.check(apiary) : false) : null
  rows.push({ scenario, metric, unit, apiary, baseline: '', ratio: null, target: target?.text ?? '', met })
}

if (wantedCluster('cluster-fanout')) {
  const { subscribers } = size.clusterFanout
  const events = ingestEvents(size.clusterFanout.events)
  const results = await alternateVariants('cluster-fanout', FANOUT_VARIANTS, (variant) =>
    clusterFanout(variant, { subscribers, events, dir: freshDir }),
  )
  raw['cluster-fanout'] = results
  const label = `cluster fan-out (${subscribers} subs × ${events.length} ev)`
  const vs = { apiary: results['cross-node'], baseline: results['single-node'] }
  addRow(label, 'A→B deliveries', '/s', vs, (r) => r.deliveriesPerSec)
  addRow(label, 'A→B publish→delivery p50', 'ms', vs, (r) => r.delivery.p50Ms)
  addRow(label, 'A→B publish→delivery p99', 'ms', vs, (r) => r.delivery.p99Ms)
  addRow(label, 'A→B deliveries received', 'count', vs, (r) => r.deliveries)
  addRow(label, 'A→B relay CPU (both nodes)', 'cores', vs, (r) => r.relayCores)
  addOneSided(label, 'A→B redis-server CPU', 'cores', results['cross-node'], (r) => r.redisCores)
  addOneSided(label, 'A→B postgres server CPU', 'cores', results['cross-node'], (r) => r.postgresCores)
  const same = { apiary: results['same-node'], baseline: results['single-node'] }
  addRow(label, 'same cluster node: deliveries', '/s', same, (r) => r.deliveriesPerSec)
  addRow(label, 'same cluster node: p50', 'ms', same, (r) => r.delivery.p50Ms)
  addRow(label, 'same cluster node: p99', 'ms', same, (r) => r.delivery.p99Ms)
  notes.push(
    'cluster-fanout: Apiary column = two cluster nodes (publisher on A, subscribers on B) or, "same cluster node" rows, one cluster node; baseline column = one embedded node (SQLite), same subscribers and events',
  )
  for (const v of FANOUT_VARIANTS) {
    results[v].forEach((o, i) => {
      if (o.ok && (o.value.incomplete || Object.keys(o.value.rejected).length)) {
        notes.push(
          `cluster-fanout ${v} r${i + 1}: ${o.value.incomplete ?? ''} ${Object.entries(o.value.rejected)
            .map(([k, n]) => `${k}=${n}`)
            .join(' ')}`.trim(),
        )
      }
    })
  }
}

if (wantedCluster('admission')) {
  const runs: Outcome<AdmissionCell[]>[] = []
  for (let round = 0; round < rounds; round++) {
    log(`  admission: round ${round + 1}/${rounds}`)
    const r = await attempt(() => admissionBench({ ...size.admission, reverse: round % 2 === 1 }))
    if (!r.ok) log(`    failed: ${r.error}`)
    runs.push(r)
  }
  raw.admission = runs
  const first = runs.find((r): r is { ok: true; value: AdmissionCell[] } => r.ok)
  if (!first) addOneSided('admission', 'decisions', '/s', runs, () => 0)
  else {
    const label = `admission (${size.admission.seconds} s per line)`
    for (const c of first.value) {
      const get = (f: (x: AdmissionCell) => number) => (cells: AdmissionCell[]) => f(cells.find((x) => x.label === c.label)!)
      addOneSided(
        label,
        `${c.label}: decisions`,
        '/s',
        runs,
        get((x) => x.decisionsPerSec),
      )
      if (c.backend === 'redis') {
        addOneSided(
          label,
          `${c.label}: call p50`,
          'ms',
          runs,
          get((x) => x.callLatency.p50Ms),
        )
        addOneSided(
          label,
          `${c.label}: call p99`,
          'ms',
          runs,
          get((x) => x.callLatency.p99Ms),
        )
        addOneSided(
          label,
          `${c.label}: redis-server CPU`,
          'cores',
          runs,
          get((x) => x.redisCores),
        )
      }
      addOneSided(
        label,
        `${c.label}: client CPU`,
        'cores',
        runs,
        get((x) => x.loadGenCores),
      )
    }
    runs.forEach((o, i) => {
      if (!o.ok) return
      for (const c of o.value)
        if (c.failed || c.refused) notes.push(`admission r${i + 1} ${c.label}: ${c.failed} calls failed, ${c.refused} decisions refused`)
    })
    notes.push(
      'admission: "×C" = C concurrent callers on one ioredis connection; admitMany/B = B decisions per call (one pipeline); redis-server CPU counts every client of the shared server',
    )
  }
}

if (wantedCluster('ingest-pg')) {
  const { events: n, ...rest } = size.ingestPg
  const events = corpus?.slice(0, n) ?? ingestEvents(n)
  const channel = channelPostEvents(n)
  const results = await alternateVariants('ingest-pg', INGEST_VARIANTS, (variant) =>
    ingestOnBackend(variant, { events, channel, ...rest, dir: freshDir }),
  )
  raw['ingest-pg'] = results
  const label = `ingest pipelined, PG+Redis vs SQLite (${rest.connections}×${rest.window})`
  const vs = { apiary: results.postgres, baseline: results.sqlite }
  addRow(label, 'accepted', 'ev/s', vs, (r) => r.eventsPerSec, atLeastTimes(0.9, 'SQLite'))
  addRow(label, 'OK latency p50', 'ms', vs, (r) => r.okLatency.p50Ms)
  addRow(label, 'OK latency p99', 'ms', vs, (r) => r.okLatency.p99Ms)
  addRow(label, 'relay CPU (all threads)', 'cores', vs, (r) => r.relayCores)
  addRow(label, 'event-loop delay p99', 'ms', vs, (r) => r.loopDelayP99Ms)
  addRow(label, 'load-generator CPU', 'cores', vs, (r) => r.loadGenCores)
  addOneSided(label, 'redis-server CPU', 'cores', results.postgres, (r) => r.redisCores)
  addOneSided(label, 'postgres server CPU', 'cores', results.postgres, (r) => r.postgresCores)
  const k9 = { apiary: results['postgres kind-9'], baseline: results.postgres }
  const k9Label = `ingest pipelined on PG, kind 9 vs kind 1 (${rest.connections}×${rest.window})`
  addRow(k9Label, 'accepted', 'ev/s', k9, (r) => r.eventsPerSec, atLeastTimes(0.8, 'kind 1'))
  addRow(k9Label, 'OK latency p50', 'ms', k9, (r) => r.okLatency.p50Ms)
  addRow(k9Label, 'OK latency p99', 'ms', k9, (r) => r.okLatency.p99Ms)
  addRow(k9Label, 'relay CPU (all threads)', 'cores', k9, (r) => r.relayCores)
  addRow(k9Label, 'redis-server CPU', 'cores', k9, (r) => r.redisCores)
  addRow(k9Label, 'postgres server CPU', 'cores', k9, (r) => r.postgresCores)
  const setupS = median(results['postgres kind-9'].flatMap((o) => (o.ok ? [o.value.setupMs / 1000] : [])))
  notes.push(
    'ingest-pg: Apiary column = one node on PostgreSQL + Redis; baseline column = one embedded node (SQLite); same events, same kind of community (bound to its own host). Relay CPU is the node process only: the PostgreSQL and Redis servers are their own rows (shared servers: every client counts)',
    `ingest-pg kind 9: Apiary column = kind 9 posts (h tag) to a public channel on PostgreSQL + Redis, from connections NIP-42-authenticated as all ${channel.setup.length} authors, every one a member (9007 + ${channel.setup.length - 1} put-users before the clock, median ${setupS.toFixed(1)} s); baseline column = the kind-1 PostgreSQL run (unauthenticated connections), same round`,
  )
  noteVariantOutcomes('ingest-pg', results)
}

if (wantedCluster('store-pg') && corpus) {
  for (const batch of size.storePg.batches) {
    const variants = Object.keys(PG_STORE_VARIANTS) as PgStoreVariant[]
    const results = await alternateVariants(`store-pg (${batch}-event commits)`, variants, (v) =>
      pgStoreCost(v, size.storePg.events, batch),
    )
    raw[`store-pg-${batch}`] = results
    const label = `PostgreSQL store alone, corpus, ${batch}-event commits`
    for (const [variant, outcomes] of Object.entries(results) as [PgStoreVariant, Outcome<PgStoreCost>[]][]) {
      addOneSided(label, `${variant}: node CPU per event`, 'µs', outcomes, (r) => r.nodeUs)
      addOneSided(label, `${variant}: server CPU per event`, 'µs', outcomes, (r) => r.serverUs)
    }
  }
  notes.push(
    'store-pg: bench/store-cost-pg.ts, one process per measurement: a fresh database, the shipped PostgresEventStore (group commit of at most the batch size, two in flight), twice the batch size in saves in flight; node CPU is that process (driver, plans), server CPU every local postgres process; the variants leave events out: what an event class costs, not a schema to ship',
  )
}

if (wantedCluster('mesh')) {
  const o = size.mesh
  const runs: Outcome<MeshFigures>[] = []
  const load0 = os.loadavg()[0]!
  for (let round = 0; round < rounds; round++) {
    log(`  mesh: round ${round + 1}/${rounds}`)
    const logDir = join(BENCH_DATA_DIR, 'mesh-logs', `${machine.date.replace(/[:.]/g, '-')}-r${round + 1}`)
    const r = await attempt(() => meshBench({ ...o, dir: freshDir, logDir }))
    if (!r.ok) log(`    failed: ${r.error}`)
    runs.push(r)
  }
  raw.mesh = runs
  addMeshRows(o, runs, load0)
}

if (CLUSTER_SCENARIOS.some(wanted)) await dropBenchDatabases()

function addMeshRows(o: (typeof size)['mesh'], runs: Outcome<MeshFigures>[], load0: number) {
  const label = 'mesh (3 processes, lease 6 s / renew 2 s)'
  const s = (ms: number) => ms / 1000
  const mib = (bytes: number) => bytes / 2 ** 20
  const atMost = (k: number, unit: string) => ({ text: `≤ ${k}${unit}`, check: (a: number) => a <= k })
  const none = { text: '0', check: (a: number) => a === 0 }
  addOneSided(label, `takeover after kill -9 of the owner p50 (${o.killTrials} trials)`, 's', runs, (r) => s(r.takeover.latency.p50Ms))
  addOneSided(
    label,
    `takeover after kill -9 of the owner p99 (${o.killTrials} trials)`,
    's',
    runs,
    (r) => s(r.takeover.latency.p99Ms),
    atMost(10, ' s'),
  )
  addOneSided(label, 'kill -9 trials without a takeover', 'count', runs, (r) => r.takeover.failures.length, none)
  addOneSided(label, `hand-over on SIGTERM p50 (${o.termTrials} trials)`, 's', runs, (r) => s(r.handover.latency.p50Ms))
  addOneSided(label, `hand-over on SIGTERM p99 (${o.termTrials} trials)`, 's', runs, (r) => s(r.handover.latency.p99Ms), atMost(1, ' s'))
  addOneSided(label, 'SIGTERM trials without a hand-over', 'count', runs, (r) => r.handover.failures.length, none)
  addOneSided(label, 'SIGTERM → process exited (drain) p50', 's', runs, (r) => s(r.handover.exit.p50Ms))
  // one run gives both columns: Apiary = forwarded to the owner, baseline = sent to the owner's node
  const forwardedVsLocal = (metric: string, get: (l: Latency) => number) => {
    const row = {
      scenario: label,
      metric,
      unit: 'ms',
      apiary: cell(runs, (r) => get(r.moderation.forwarded)),
      baseline: cell(runs, (r) => get(r.moderation.local)),
    }
    const ratio =
      typeof row.apiary === 'number' && typeof row.baseline === 'number' && row.baseline !== 0
        ? Math.round((row.apiary / row.baseline) * 100) / 100
        : null
    rows.push({ ...row, ratio, target: '', met: null })
  }
  forwardedVsLocal(`put-user OK p50, forwarded vs at the owner (${o.moderationEvents} each)`, (l) => l.p50Ms)
  forwardedVsLocal(`put-user OK p99, forwarded vs at the owner (${o.moderationEvents} each)`, (l) => l.p99Ms)
  addOneSided(label, `gossip convergence: spawn → all linked (median of ${o.convergenceRuns})`, 's', runs, (r) =>
    s(median(r.convergence.startToLinkedMs)),
  )
  addOneSided(label, 'gossip convergence: all listening → all linked', 's', runs, (r) => s(median(r.convergence.listeningToLinkedMs)))
  addOneSided(label, 'a replacement node: spawn → all linked p50', 's', runs, (r) => s(r.takeover.relink.p50Ms))
  const tunnel = `mesh tunnel, 1 MiB requests × ${o.tunnelRequests}, 8 in flight (one process)`
  addOneSided(tunnel, 'throughput', 'MiB/s', runs, (r) => r.tunnel.mibPerSec)
  addOneSided(tunnel, 'request → 1-byte answer p50', 'ms', runs, (r) => r.tunnel.requestLatency.p50Ms)
  addOneSided(tunnel, 'request → 1-byte answer p99', 'ms', runs, (r) => r.tunnel.requestLatency.p99Ms)
  addOneSided(tunnel, 'process CPU (both ends)', 'cores', runs, (r) => r.tunnel.cores)
  const stalled = `mesh tunnel to a SIGSTOPped peer, 1 MiB requests for ${o.stallSeconds} s`
  addOneSided(stalled, 'rss at start (after a forced GC)', 'MiB', runs, (r) => mib(r.stalled.start.rss))
  addOneSided(stalled, 'rss max', 'MiB', runs, (r) => mib(r.stalled.max.rss))
  addOneSided(stalled, 'heapUsed at start', 'MiB', runs, (r) => mib(r.stalled.start.heapUsed))
  addOneSided(stalled, 'heapUsed max', 'MiB', runs, (r) => mib(r.stalled.max.heapUsed))
  addOneSided(stalled, 'external (Buffers) at start', 'MiB', runs, (r) => mib(r.stalled.start.external))
  addOneSided(stalled, 'external (Buffers) max', 'MiB', runs, (r) => mib(r.stalled.max.external))
  addOneSided(stalled, 'socket send buffer max', 'MiB', runs, (r) => mib(r.stalled.max.bufferedAmount))
  addOneSided(stalled, 'queued for credit max', 'MiB', runs, (r) => mib(r.stalled.max.queuedBytes))
  addOneSided(stalled, 'requests attempted', 'count', runs, (r) => r.stalled.attempts)
  addOneSided(stalled, 'requests taken (in flight)', 'count', runs, (r) => r.stalled.accepted)
  addOneSided(stalled, 'BUSY refusals', 'count', runs, (r) => r.stalled.busy)
  addOneSided(stalled, 'taken requests answered after SIGCONT', 'count', runs, (r) => r.stalled.answeredAfterResume)
  notes.push(
    `mesh: three \`node bin/apiary.js start\` processes (dist/), APIARY_MESH=on, mesh port 0, one fresh PostgreSQL database, the shared Redis, one relay key and community, rate limits wide open, verifier threads at their default; node logs (warn) in .bench-data/mesh-logs/. Convergence: a first node migrates the database alone (untimed), then ${o.convergenceRuns} time(s) three fresh processes are spawned together and /mesh/status of each polled every 50 ms until it lists 2 connected peers. Forwarded vs local: Apiary column = put-users (9000) sent to a non-owner node (forwarded over the tunnel), baseline column = the same sent to the owner's node, awaited one at a time, rounds of 10 alternating. Takeover / hand-over: a fresh channel per trial, created through each node in turn (that node owns it, read from /mesh/status); a client on another node sends put-users one at a time, 100 ms apart; once 3 were accepted and a random 0–2 s later (one renewal period: the lease is otherwise always ~0.6 s old at the signal), the owner is signalled right after an OK (nothing in flight); figure = signal → the first OK true to an event sent after it (the client's next send, ≤ 100 ms later, included); then a replacement process is spawned and all three relinked. Tunnel: src/infra/mesh/tunnel-handshake.ts dialer and server in the bench process over 127.0.0.1, handler answering 1 byte. Stalled peer: the server in a child (bench/mesh-peer.ts) SIGSTOPped after 3 warm-up requests; 1 MiB requests (a body of its own each, 60 s timeout) with a 5 ms pause between attempts, process.memoryUsage() and the tunnel's stats() every 500 ms; then SIGCONT. Load average (1 min) at the scenario's start ${load0.toFixed(2)}, at its end ${os.loadavg()[0]!.toFixed(2)}, on ${os.cpus().length} cores`,
  )
  runs.forEach((r, i) => {
    if (!r.ok) return
    const v = r.value
    for (const t of [v.takeover, v.handover]) {
      for (const f of t.failures) notes.push(`mesh r${i + 1} ${t.signal}: ${f}`)
      const refused: Record<string, number> = {}
      for (const x of t.trials) for (const [k, n] of Object.entries(x.refusals)) refused[k] = (refused[k] ?? 0) + n
      if (Object.keys(refused).length)
        notes.push(
          `mesh r${i + 1} ${t.signal}: OK false after the signal: ${Object.entries(refused)
            .map(([k, n]) => `${k}=${n}`)
            .join(' ')}`,
        )
      const notRaised = t.trials.filter((x) => !(x.generationAfter > x.generationBefore))
      if (notRaised.length)
        notes.push(
          `mesh r${i + 1} ${t.signal}: ${notRaised.length} trial(s) where the witness node did not see a higher generation afterwards`,
        )
      notes.push(`mesh r${i + 1} ${t.signal} per trial (s): ${t.trials.map((x) => (x.ms / 1000).toFixed(2)).join(' ')}`)
    }
    if (Object.keys(v.moderation.refusals).length)
      notes.push(`mesh r${i + 1} moderation: OK false ${JSON.stringify(v.moderation.refusals)}`)
    const failed = Object.entries(v.stalled.failedAfterResume)
    if (failed.length)
      notes.push(`mesh r${i + 1} stalled peer: taken requests that failed after SIGCONT: ${failed.map(([k, n]) => `${k}=${n}`).join(' ')}`)
  })
}

// ---------------------------------------------------------------- output

const fmt = (v: number | string) => (typeof v === 'number' ? v.toLocaleString('en-US', { maximumFractionDigits: 2 }) : v)
const table = [
  ['scenario', 'metric', 'unit', 'Apiary', 'baseline', 'A/B', 'target', 'met'],
  ...rows.map((r) => [
    r.scenario,
    r.metric,
    r.unit,
    fmt(r.apiary),
    fmt(r.baseline),
    r.ratio === null ? '' : `${r.ratio}×`,
    r.target,
    r.met === null ? '' : r.met ? 'met' : 'NOT MET',
  ]),
]
const widths = table[0]!.map((_, c) => Math.min(60, Math.max(...table.map((row) => String(row[c]).length))))
console.log(`\nmedians over ${rounds} round(s)`)
for (const [i, row] of table.entries()) {
  console.log(
    row
      .map((v, c) => String(v).slice(0, 60).padEnd(widths[c]!))
      .join('  ')
      .trimEnd(),
  )
  if (i === 0) console.log(widths.map((w) => '-'.repeat(w)).join('  '))
}
if (notes.length) console.log(`\nnotes:\n${notes.map((n) => `  ${n}`).join('\n')}`)

mkdirSync(BENCH_DATA_DIR, { recursive: true })
const outFile = join(BENCH_DATA_DIR, 'last-run.json')
writeFileSync(outFile, JSON.stringify({ machine, sizes: size, ceiling, rows, notes, raw }, null, 2))
console.log(`\nwritten: ${outFile}`)

// ---------------------------------------------------------------- REQ data-set pre-load

/**
 * Returns a directory holding `ds` for `name`.
 * - baseline: written straight through its repository's `upsert` in the relay process (no signature check,
 *   fsync off while loading) — over the wire at ~400 ev/s 100k events would take minutes. The resulting SQLite
 *   file is cached in .bench-data/ and copied on later runs.
 * - Apiary: over the wire (pipelined ingest, 4 connections × 200), the real write path; ~3k ev/s, so the full
 *   100k take ~35 s, once per run (its schema is still moving, so no cache).
 */
async function preload(name: RelayName, ds: Dataset): Promise<string> {
  const dir = freshDir(`${name}-req`)
  if (name === 'baseline') {
    const cacheFile = join(BENCH_DATA_DIR, `baseline-req-${ds.events.length}-${ds.events[0]!.id.slice(0, 12)}.sqlite`)
    if (existsSync(cacheFile)) {
      copyFileSync(cacheFile, join(dir, 'baseline.sqlite'))
      return dir
    }
    const { fixtureFile } = await import('./fixtures')
    const t0 = performance.now()
    const stored = await withRelay('baseline', dir, (relay) => relay.prefill(fixtureFile('dataset'), ds.events.length))
    log(`    baseline: ${stored} events written in ${((performance.now() - t0) / 1000).toFixed(1)} s`)
    // the relay closed its database (WAL checkpointed), so the file alone is the data set
    copyFileSync(join(dir, 'baseline.sqlite'), cacheFile)
    return dir
  }
  const r = await withRelay('apiary', dir, (relay) => ingestPipelined(relay.url, { events: ds.events, connections: 4, window: 200 }))
  log(
    `    apiary: ${r.accepted}/${ds.events.length} accepted at ${r.eventsPerSec} ev/s${Object.keys(r.rejected).length ? ` (not accepted: ${JSON.stringify(r.rejected)})` : ''}`,
  )
  notes.push(`req pre-load apiary: ${r.accepted}/${ds.events.length} accepted over the wire at ${r.eventsPerSec} ev/s`)
  if (r.accepted < ds.events.length * 0.99)
    throw new Error(`only ${r.accepted}/${ds.events.length} events accepted: ${JSON.stringify(r.rejected)}`)
  return dir
}
