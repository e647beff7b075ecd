// `jobs-cluster` (Apiary only): dispatched jobs on two `apiary start` processes with the mesh on (docs/jobs.md#in-a-cluster),
// sharing Redis and a fresh PostgreSQL database. Chunk latency from an agent to a requester on the other node
// (over the mesh tunnel), against a requester on the agent's own node in the same run; and how long a job held
// by an agent killed with SIGKILL takes to reach another agent, both agents on the node that does not run the
// capability's dispatcher, the requester on the one that does.
import { join } from 'node:path'
import { rowsOf } from '../lib/figures'
import { BENCH_DATA_DIR } from '../lib/fixtures'
import { type ChunkLatency, chunkLatency, type Reassignment, reassignmentAfterKill } from '../lib/load/job-cluster'
import { openMeshCluster } from '../lib/mesh/nodes'
import { type Context, defineScenario, type Figure, type Outcome } from '../lib/scenario'

const optionsOf = (ctx: Context) => (ctx.quick ? { jobs: 40, chunks: 20, trials: 3 } : { jobs: 200, chunks: 20, trials: 10 })

interface ClusterJobs {
  chunks: ChunkLatency
  reassignment: Reassignment
}

async function measure(ctx: Context, startedAt: string, round: number): Promise<ClusterJobs> {
  const o = optionsOf(ctx)
  const cluster = await openMeshCluster(ctx.freshDir, join(BENCH_DATA_DIR, 'jobs-cluster-logs', `${startedAt}-r${round + 1}`))
  try {
    // one after the other: two nodes migrating one empty database at once would race
    const a = await cluster.start()
    const b = await cluster.start()
    await cluster.waitLinked([a, b], performance.now())
    const chunks = await chunkLatency(b.url, a.url, o)
    const reassignment = await reassignmentAfterKill(b.url, a.url, o.trials)
    return { chunks, reassignment }
  } finally {
    await cluster.close()
  }
}

function figuresOf(runs: Outcome<ClusterJobs>[], ctx: Context): Figure[] {
  const o = optionsOf(ctx)
  const chunk = (figure: string, get: (c: ChunkLatency) => number): Figure => {
    const row = rowsOf(
      runs,
      undefined,
      `chunk latency, agent → requester on the other node (baseline: on the agent's node), ${o.jobs} jobs × ${o.chunks} chunks`,
    )
    const across = row(figure, 'ms', (r) => get(r.chunks))
    return { ...across, baseline: rowsOf(runs.map(sameSide), undefined)(figure, 'ms', (r) => get(r.chunks)).apiary }
  }
  const kill = rowsOf(runs, undefined, `reassignment after kill -9 of the assignee, ${o.trials} trials`)
  return [
    chunk('p50', (c) => c.across.p50Ms),
    chunk('p99', (c) => c.across.p99Ms),
    chunk('max', (c) => c.across.maxMs),
    kill('kill -9 → another agent assigned p50', 'ms', (r) => r.reassignment.latency.p50Ms),
    kill('kill -9 → another agent assigned p99', 'ms', (r) => r.reassignment.latency.p99Ms),
    kill('trials without a reassignment', 'count', (r) => r.reassignment.failures),
  ]
}

/** the same run's same-node figures in the `across` slot, for the baseline column */
function sameSide(r: Outcome<ClusterJobs>): Outcome<ClusterJobs> {
  return r.ok ? { ok: true, value: { ...r.value, chunks: { ...r.value.chunks, across: r.value.chunks.same } } } : r
}

export const scenario = defineScenario({
  name: 'jobs-cluster',
  describe: 'dispatched jobs on two mesh nodes: chunk latency across nodes, reassignment after kill -9 of the assignee',
  needs: ['redis', 'postgres'],
  sides: () => ['apiary'] as const,
  prepare: async () => new Date().toISOString().replace(/[:.]/g, '-'),
  measure: (_side, round, startedAt, ctx) => measure(ctx, startedAt, round),
  report: (results, _prepared, ctx) => ({
    figures: figuresOf(results.apiary, ctx),
    notes: results.apiary.flatMap((r, i) =>
      r.ok
        ? [
            `jobs-cluster r${i + 1}: chunks received across ${r.value.chunks.chunks.across}, same node ${r.value.chunks.chunks.same}, of ${r.value.chunks.chunks.expected} each`,
          ]
        : [],
    ),
  }),
})
