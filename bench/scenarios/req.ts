// `req`: REQ → EOSE on a stored data set (300 authors, notes with topics and mentions, reactions, over 30 days),
// one filter shape at a time, after a warm-up of every shape: sequential from one socket, then concurrent from 8,
// closed loop. `limit` is random in 20..60 so that queries are distinct filters (the baseline caches identical
// ones for a second).
// "events per query" must match between the relays: a correctness cross-check.
import { cpuPerUnitUs, relayRowsOf } from '../lib/figures'
import { type Dataset, reqDataset } from '../lib/fixtures'
import { REQ_SHAPES, type ReqShapeResult, reqLatency } from '../lib/load/req'
import { type RelayName, withRelay } from '../lib/relay-process'
import { preloadOnce } from '../lib/req-preload'
import { type Context, defineScenario } from '../lib/scenario'
import { comparedRelays } from '../lib/strfry-relay'

const sizeOf = (ctx: Context) =>
  ctx.quick
    ? { stored: 10_000, queries: 50, concurrentQueries: 200, connections: 8, warmupQueries: 100 }
    : { stored: 100_000, queries: 200, concurrentQueries: 2_000, connections: 8, warmupQueries: 1_000 }

async function measure(side: RelayName, ds: Dataset, ctx: Context): Promise<ReqShapeResult[]> {
  const size = sizeOf(ctx)
  const dir = await preloadOnce(side, ds, ctx)
  return withRelay(side, dir, (relay) =>
    reqLatency(relay.url, {
      dataset: ds,
      ...size,
      onConcurrent: async () => {
        const cpu0 = await relay.cpuMicros()
        const t0 = performance.now()
        return async () => Math.round((((await relay.cpuMicros()) - cpu0) / 1000 / (performance.now() - t0)) * 100) / 100
      },
    }),
  )
}

export const scenario = defineScenario({
  name: 'req',
  describe: 'REQ → EOSE per filter shape on a stored data set, sequential and 8 sockets at once',
  needs: ['baseline relay'],
  sides: comparedRelays,
  prepare: async (ctx) => reqDataset(sizeOf(ctx).stored),
  measure: (side: RelayName, _round, ds, ctx) => measure(side, ds, ctx),
  report: (results, ds, ctx) => ({
    figures: REQ_SHAPES.flatMap((shape) => {
      const row = relayRowsOf(results, `${shape} (${ds.events.length} stored)`)
      const of = (f: (r: ReqShapeResult) => number) => (rs: ReqShapeResult[]) => f(rs.find((r) => r.shape === shape)!)
      return [
        row(
          'concurrent queries',
          'q/s',
          of((r) => r.concurrent.queriesPerSec),
        ),
        row(
          'relay CPU per query, concurrent',
          'µs',
          of((r) => cpuPerUnitUs(r.concurrentProbe ?? Number.NaN, r.concurrent.queriesPerSec)),
        ),
        row(
          'concurrent p99',
          'ms',
          of((r) => r.concurrent.latency.p99Ms),
        ),
        row(
          'sequential p50',
          'ms',
          of((r) => r.sequential.latency.p50Ms),
        ),
        row(
          'sequential p99',
          'ms',
          of((r) => r.sequential.latency.p99Ms),
        ),
        row(
          'events per query',
          'mean',
          of((r) => r.sequential.meanEvents),
        ),
      ]
    }),
    notes: [`req: ${sizeOf(ctx).connections} sockets in the concurrent phase`],
  }),
})
