// `cluster`: what a second and a third node buy. Three cluster nodes on one Redis and PostgreSQL against one
// cluster node on the same backends (a fresh database and community each run), rounds alternating. Ingest: the
// corpus, each of the three nodes fed a third by a pipelined load of its own, all at once, against the one
// node fed all of it in the same shape. Delivery: subscribers spread over the three nodes and a publisher on
// each at a fixed rate, against one node carrying every subscriber and the three publishers. On a 2-core
// machine the nodes, Redis and PostgreSQL share the cores: the figures say what more processes on the same
// cores buy, not what more machines would.
import { BENCH_HOST, cpuProbe, openClusterEnv, withNodes } from '../lib/cluster-backends'
import { corpusSize, prepareCorpus } from '../lib/corpus-ingest'
import { cpuPerUnitUs, outcomeNotes, rowsOf } from '../lib/figures'
import { type BenchEvent, ingestEvents } from '../lib/fixtures'
import { fanoutOverNodes, type NodesFanoutResult } from '../lib/load/fanout-nodes'
import { ingestOverNodes, type NodesIngestResult } from '../lib/load/ingest-nodes'
import { relayCpu } from '../lib/proc-readings'
import type { RelayProcess } from '../lib/relay-types'
import { type Context, defineScenario, type Outcome, type Report, type Results } from '../lib/scenario'

const SIDES = ['three nodes', 'one node'] as const
type Side = (typeof SIDES)[number]
const NODES: Record<Side, number> = { 'three nodes': 3, 'one node': 1 }
/** publishers in both sides (one per node of the three), so the two differ only in where the sockets are */
const PUBLISHERS = 3

type ServerFigures = ReturnType<typeof cpuProbe>['figures']
type ClusterIngest = NodesIngestResult & ServerFigures & { nodeCores: number[] }
type ClusterDelivery = NodesFanoutResult & ServerFigures & { nodes: number }
/** each part apart, so a failed one leaves the other's figures */
interface ClusterResult {
  ingest: Outcome<ClusterIngest>
  delivery: Outcome<ClusterDelivery>
}

interface Fixtures {
  corpus: BenchEvent[]
  /** one slice per publisher */
  published: BenchEvent[][]
}

/** 15 events/s from each publisher: 45 events/s to every subscriber, well inside what one node delivers */
const sizeOf = (ctx: Context) => ({
  connections: 4,
  window: 16,
  maxSeconds: corpusSize(ctx.quick).maxSeconds,
  subscribersPerNode: ctx.quick ? 100 : 300,
  ratePerSecEach: 15,
  publishSeconds: ctx.quick ? 5 : 15,
})

/** `events` dealt round robin into `n` slices: each slice spans the whole corpus, its kinds and its authors */
const deal = <T>(events: readonly T[], n: number): T[][] => Array.from({ length: n }, (_, k) => events.filter((_e, i) => i % n === k))

/** every node's own CPU (from /proc) over the probe's window, beside the probe's figures */
function perNodeProbe(nodes: RelayProcess[], probe: ReturnType<typeof cpuProbe>) {
  const cpus = nodes.map((n) => relayCpu(n.pid))
  let cpu0: number[] = []
  let t0 = 0
  const nodeCores: number[] = []
  return {
    nodeCores,
    onStart: async () => {
      await probe.onStart()
      cpu0 = cpus.map((c) => c.seconds())
      t0 = performance.now()
    },
    onEnd: async () => {
      const s = (performance.now() - t0) / 1000
      nodeCores.push(...cpus.map((c, i) => Math.round(((c.seconds() - cpu0[i]!) / s) * 100) / 100))
      await probe.onEnd()
    },
  }
}

async function measureIngest(side: Side, corpus: BenchEvent[], ctx: Context): Promise<ClusterIngest> {
  const env = await openClusterEnv()
  try {
    return await withNodes(NODES[side], env.config, ctx.freshDir, async (nodes) => {
      const probe = cpuProbe(nodes, env.redis)
      const perNode = perNodeProbe(nodes, probe)
      const { connections, window, maxSeconds } = sizeOf(ctx)
      const r = await ingestOverNodes({
        urls: nodes.map((n) => n.url),
        slices: deal(corpus, nodes.length),
        connections,
        window,
        maxSeconds,
        host: BENCH_HOST,
        onStart: perNode.onStart,
        onEnd: perNode.onEnd,
      })
      return { ...r, ...probe.figures, nodeCores: perNode.nodeCores }
    })
  } finally {
    await env.close()
  }
}

async function measureDelivery(side: Side, published: BenchEvent[][], ctx: Context): Promise<ClusterDelivery> {
  const env = await openClusterEnv()
  try {
    return await withNodes(NODES[side], env.config, ctx.freshDir, async (nodes) => {
      const probe = cpuProbe(nodes, env.redis)
      const urls = nodes.map((n) => n.url)
      const r = await fanoutOverNodes({
        subscriberUrls: urls,
        subscribersPerUrl: (sizeOf(ctx).subscribersPerNode * PUBLISHERS) / nodes.length,
        publisherUrls: Array.from({ length: PUBLISHERS }, (_, p) => urls[p % urls.length]!),
        events: published,
        ratePerSecEach: sizeOf(ctx).ratePerSecEach,
        host: BENCH_HOST,
        onStart: probe.onStart,
        onEnd: probe.onEnd,
      })
      return { ...r, ...probe.figures, nodes: nodes.length }
    })
  } finally {
    await env.close()
  }
}

async function settle<T>(run: () => Promise<T>): Promise<Outcome<T>> {
  try {
    return { ok: true, value: await run() }
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) }
  }
}

async function measure(side: Side, fx: Fixtures, ctx: Context): Promise<ClusterResult> {
  const ingest = await settle(() => measureIngest(side, fx.corpus, ctx))
  return { ingest, delivery: await settle(() => measureDelivery(side, fx.published, ctx)) }
}

const partOf = <K extends keyof ClusterResult>(outcomes: Outcome<ClusterResult>[] | undefined, key: K) =>
  (outcomes ?? []).map((o) => (o.ok ? o.value[key] : o)) as ClusterResult[K][]

function ingestRows(three: Outcome<ClusterIngest>[], one: Outcome<ClusterIngest>[], ctx: Context) {
  const { connections, window } = sizeOf(ctx)
  const row = rowsOf(three, one, `ingest, ${connections} × ${window} per node: three nodes vs one node`)
  const perEvent = (cores: (r: ClusterIngest) => number) => (r: ClusterIngest) => cpuPerUnitUs(cores(r), r.eventsPerSec)
  return [
    row('accepted (every node)', 'ev/s', (r) => r.eventsPerSec),
    row(
      'relay CPU per accepted event (every node)',
      'µs',
      perEvent((r) => r.relayCores),
    ),
    row(
      'postgres server CPU per accepted event',
      'µs',
      perEvent((r) => r.postgresCores),
    ),
    row(
      'redis-server CPU per accepted event',
      'µs',
      perEvent((r) => r.redisCores),
    ),
    row('OK latency p99 (worst node)', 'ms', (r) => Math.max(...r.perNode.map((n) => n.okLatency.p99Ms))),
    row('event-loop delay p99 (worst node)', 'ms', (r) => r.loopDelayP99Ms),
    row('relay CPU (every node)', 'cores', (r) => r.relayCores),
    row('postgres server CPU', 'cores', (r) => r.postgresCores),
  ]
}

function deliveryRows(three: Outcome<ClusterDelivery>[], one: Outcome<ClusterDelivery>[], ctx: Context) {
  const { subscribersPerNode, ratePerSecEach } = sizeOf(ctx)
  const group = `delivery ${ratePerSecEach * PUBLISHERS} ev/s, ${subscribersPerNode * PUBLISHERS} subscribers: three nodes vs one node`
  const row = rowsOf(three, one, group)
  const threeOnly = rowsOf(three, undefined, group)
  // the compared latency: of deliveries crossing nodes on three nodes, of every delivery on one
  const measured = (r: ClusterDelivery) => (r.nodes > 1 ? r.crossNode : r.sameNode)
  return [
    row('deliveries', '/s', (r) => r.deliveriesPerSec),
    row('relay CPU per delivery (every node)', 'µs', (r) => cpuPerUnitUs(r.relayCores, r.deliveriesPerSec)),
    row('publish→delivery p50 (across nodes; one node: all)', 'ms', (r) => measured(r).p50Ms),
    row('publish→delivery p99 (across nodes; one node: all)', 'ms', (r) => measured(r).p99Ms),
    threeOnly("publish→delivery p50, publisher's own node", 'ms', (r) => r.sameNode.p50Ms),
    threeOnly("publish→delivery p99, publisher's own node", 'ms', (r) => r.sameNode.p99Ms),
    row('deliveries received', 'count', (r) => r.deliveries),
    row('relay CPU (every node)', 'cores', (r) => r.relayCores),
    row('redis-server CPU', 'cores', (r) => r.redisCores),
    row('postgres server CPU', 'cores', (r) => r.postgresCores),
  ]
}

/** what each node got, per round */
function nodeNotes(side: Side, ingest: Outcome<ClusterIngest>[], delivery: Outcome<ClusterDelivery>[]): string[] {
  const ingestNotes = ingest.flatMap((o, i) =>
    o.ok
      ? [
          `cluster ${side} r${i + 1}, ingest per node: ${o.value.perNode
            .map((n, k) => `${n.accepted} accepted at ${n.eventsPerSec} ev/s, ${o.value.nodeCores[k]} cores`)
            .join('; ')}`,
        ]
      : [],
  )
  const deliveryNotes = delivery.flatMap((o, i) =>
    o.ok
      ? [
          `cluster ${side} r${i + 1}, delivery: subscribers per node received ${o.value.deliveriesByNode.join(' / ')}; publishers had ${o.value.publishers
            .map((p) => `${p.accepted}/${p.published}`)
            .join(', ')} accepted`,
        ]
      : [],
  )
  return [...ingestNotes, ...deliveryNotes]
}

function report(results: Results<Side, ClusterResult>, fx: Fixtures, ctx: Context): Report {
  const ingest = (side: Side) => partOf(results[side], 'ingest')
  const delivery = (side: Side) => partOf(results[side], 'delivery')
  const { subscribersPerNode, ratePerSecEach, connections, window } = sizeOf(ctx)
  const offered = ratePerSecEach * PUBLISHERS * subscribersPerNode * PUBLISHERS
  return {
    figures: [
      ...ingestRows(ingest('three nodes'), ingest('one node'), ctx),
      ...deliveryRows(delivery('three nodes'), delivery('one node'), ctx),
    ],
    notes: [
      `cluster: the three nodes, Redis and PostgreSQL share this machine's cores; the Redis and PostgreSQL CPU rows count every client of those servers`,
      `cluster ingest: ${fx.corpus.length} corpus events, dealt round robin over the nodes, ${connections} × ${window} in flight per node; the one node takes all of them in one such load. Accepted ev/s: every node's accepted events over one window, from the common start to the last OK anywhere`,
      'cluster ingest: an older version of a replaceable event that reaches its node after another node stored a newer one is answered "duplicate:" and not counted',
      `cluster delivery: ${PUBLISHERS} publishers × ${ratePerSecEach} ev/s for ${sizeOf(ctx).publishSeconds} s (offered ${offered} deliveries/s), ${subscribersPerNode} subscribers per node of three, or all on the one node with its three publishers`,
      ...SIDES.flatMap((side) => [
        ...nodeNotes(side, ingest(side), delivery(side)),
        ...outcomeNotes(`cluster ${side} ingest`, ingest(side)),
        ...outcomeNotes(`cluster ${side} delivery`, delivery(side)),
      ]),
    ],
  }
}

export const scenario = defineScenario({
  name: 'cluster',
  describe: 'three cluster nodes vs one on the same Redis + PostgreSQL (sharing these cores): aggregate ingest, cross-node delivery',
  needs: ['redis', 'postgres'],
  sides: () => SIDES,
  prepare: async (ctx): Promise<Fixtures> => {
    const { ratePerSecEach, publishSeconds } = sizeOf(ctx)
    return {
      corpus: await prepareCorpus(ctx),
      published: deal(ingestEvents(PUBLISHERS * ratePerSecEach * publishSeconds), PUBLISHERS),
    }
  },
  measure: (side: Side, _round, fx: Fixtures, ctx) => measure(side, fx, ctx),
  report,
})
