// `cluster-fanout`: two cluster nodes on the shared Redis and PostgreSQL, subscribers on node B, one publisher
// on node A: every event goes A → PostgreSQL + Redis pub/sub → B → subscribers. Beside it, one cluster node
// carrying both ends (the backends without the hop) and one embedded node (SQLite, in-process bus: the
// baseline column), same subscribers and events, rounds alternating the three.
import { BENCH_HOST, cpuProbe, embeddedConfig, openClusterEnv, withNodes } from '../lib/cluster-backends'
import { cpuPerUnitUs, outcomeNotes, rowsOf } from '../lib/figures'
import { type BenchEvent, ingestEvents } from '../lib/fixtures'
import { type FanoutResult, fanout } from '../lib/load/fanout'
import { type Context, defineScenario, type Report, type Results } from '../lib/scenario'

/**
 * cross-node: publisher on node A, subscribers on node B (the measured path: A stores, publishes on Redis,
 * B's bridge receives and fans out). same-node: one cluster node, publisher and subscribers on it (cluster
 * store and bus, no hop between nodes). single-node: one embedded node (SQLite, in-process bus) — the
 * baseline, as in the `fanout` scenario.
 */
const FANOUT_VARIANTS = ['cross-node', 'single-node', 'same-node'] as const
type FanoutVariant = (typeof FANOUT_VARIANTS)[number]

type ClusterFanoutResult = FanoutResult & {
  variant: FanoutVariant
  relayCores: number
  redisCores: number
  postgresCores: number
  loopDelayP99Ms: number
}

async function clusterFanout(
  variant: FanoutVariant,
  opts: { subscribers: number; events: BenchEvent[]; dir: (label: string) => string },
): Promise<ClusterFanoutResult> {
  const env = variant === 'single-node' ? undefined : await openClusterEnv()
  try {
    return await withNodes(variant === 'cross-node' ? 2 : 1, env?.config ?? embeddedConfig(), opts.dir, async (nodes) => {
      const probe = cpuProbe(nodes, env?.redis)
      const r = await fanout(nodes[nodes.length - 1]!.url, {
        subscribers: opts.subscribers,
        events: opts.events,
        host: BENCH_HOST,
        publisherUrl: nodes[0]!.url,
        onStart: probe.onStart,
        onEnd: probe.onEnd,
      })
      return { ...r, variant, ...probe.figures }
    })
  } finally {
    await env?.close()
  }
}

const sizeOf = (ctx: Context) => ({ subscribers: 200, events: ctx.quick ? 100 : 500 })

function report(results: Results<FanoutVariant, ClusterFanoutResult>, events: BenchEvent[], ctx: Context): Report {
  const groups = [
    ['node A → node B vs one embedded node', results['cross-node']],
    ['one cluster node vs one embedded node', results['same-node']],
  ] as const
  const figures = groups.flatMap(([group, cluster]) => {
    const row = rowsOf(cluster, results['single-node'], group)
    const servers = rowsOf(cluster, undefined, group)
    return [
      row('deliveries', '/s', (r) => r.deliveriesPerSec),
      row('relay CPU per delivery (every node)', 'µs', (r) => cpuPerUnitUs(r.relayCores, r.deliveriesPerSec)),
      row('publish→delivery p50', 'ms', (r) => r.delivery.p50Ms),
      row('publish→delivery p99', 'ms', (r) => r.delivery.p99Ms),
      row('deliveries received', 'count', (r) => r.deliveries),
      row('relay CPU (every node)', 'cores', (r) => r.relayCores),
      servers('redis-server CPU', 'cores', (r) => r.redisCores),
      servers('postgres server CPU', 'cores', (r) => r.postgresCores),
    ]
  })
  return {
    figures,
    notes: [
      `cluster-fanout: ${sizeOf(ctx).subscribers} subscribers × ${events.length} events; the Redis and PostgreSQL CPU rows count every client of those shared servers`,
      ...FANOUT_VARIANTS.flatMap((v) => outcomeNotes(`cluster-fanout ${v}`, results[v])),
    ],
  }
}

export const scenario = defineScenario({
  name: 'cluster-fanout',
  describe: 'fan-out across two cluster nodes (Redis + PostgreSQL) vs one node',
  needs: ['redis', 'postgres'],
  sides: () => FANOUT_VARIANTS,
  prepare: async (ctx) => ingestEvents(sizeOf(ctx).events),
  measure: (variant: FanoutVariant, _round, events, ctx) =>
    clusterFanout(variant, { subscribers: sizeOf(ctx).subscribers, events, dir: ctx.freshDir }),
  report,
})
