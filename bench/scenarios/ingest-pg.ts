// `ingest-pg`: pipelined ingest (4 connections × 200 in flight) into one community of one node, three variants
// alternating: `postgres` (PostgreSQL + Redis, the corpus), `sqlite` (an embedded node serving the same kind
// of community, the corpus) and `postgres kind-9`: NIP-29 posts to a public channel on PostgreSQL + Redis,
// from connections NIP-42-authenticated as every author, each a member (9007 + put-users before the clock).
// Relay CPU is the node process's; the Redis and PostgreSQL servers' are rows of their own.
import type WebSocket from 'ws'
import { connectAuthed, setUpChannel } from '../lib/channel-setup'
import { BENCH_HOST, cpuProbe, embeddedConfig, openClusterEnv, withNodes } from '../lib/cluster-backends'
import { corpusEvents } from '../lib/corpus'
import { corpusSize } from '../lib/corpus-ingest'
import { cpuPerUnitUs, median, outcomeNotes, rowsOf } from '../lib/figures'
import { type BenchEvent, channelIngestKeys, channelPostEvents, PRESIGNED_CHANNEL_CONFIG } from '../lib/fixtures'
import { type IngestResult, ingestPipelined } from '../lib/load/ingest'
import { type Context, defineScenario, type Report, type Results } from '../lib/scenario'

/**
 * postgres: kind 1 into one cluster node (PostgreSQL store, Redis gates); sqlite: the same into one embedded
 * node (same kind of community, bound to BENCH_HOST) — the reference for the PostgreSQL figure; postgres
 * kind-9: NIP-29 posts to a public channel on a cluster node, from connections authenticated (NIP-42) as
 * every author, all of them members (9007 + 9000s before the clock) — the kind-1 row is its reference.
 */
const INGEST_VARIANTS = ['postgres', 'sqlite', 'postgres kind-9'] as const
type IngestVariant = (typeof INGEST_VARIANTS)[number]

type BackendIngestResult = IngestResult & {
  variant: IngestVariant
  relayCores: number
  redisCores: number
  postgresCores: number
  loopDelayP99Ms: number
  setupMs: number
}

/** Pipelined ingest into one node: cluster backends (PostgreSQL store, Redis gates) or embedded SQLite. */
async function ingestOnBackend(
  variant: IngestVariant,
  opts: {
    events: BenchEvent[]
    channel: { setup: BenchEvent[]; posts: BenchEvent[] }
    connections: number
    window: number
    maxSeconds: number
    dir: (label: string) => string
  },
): Promise<BackendIngestResult> {
  const env = variant === 'sqlite' ? undefined : await openClusterEnv()
  try {
    // every variant alike, so the kind-9 one differs from the others only in its events
    const config = { ...(env?.config ?? embeddedConfig()), ...PRESIGNED_CHANNEL_CONFIG }
    return await withNodes(1, config, opts.dir, async ([node]) => {
      const url = node!.url
      let setupMs = 0
      let openConnection: ((i: number) => Promise<WebSocket>) | undefined
      if (variant === 'postgres kind-9') {
        const t0 = performance.now()
        await setUpChannel(url, opts.channel.setup, BENCH_HOST)
        setupMs = Math.round(performance.now() - t0)
        const authors = channelIngestKeys()
        openConnection = () => connectAuthed(url, authors, BENCH_HOST)
      }
      const probe = cpuProbe([node!], env?.redis)
      const r = await ingestPipelined(url, {
        events: variant === 'postgres kind-9' ? opts.channel.posts : opts.events,
        connections: opts.connections,
        window: opts.window,
        maxSeconds: opts.maxSeconds,
        host: BENCH_HOST,
        ...(openConnection ? { openConnection } : {}),
        onStart: probe.onStart,
        onEnd: probe.onEnd,
      })
      return { ...r, variant, setupMs, ...probe.figures }
    })
  } finally {
    await env?.close()
  }
}

const sizeOf = (ctx: Context) => ({ events: corpusSize(ctx.quick).events, connections: 4, window: 200, maxSeconds: ctx.quick ? 10 : 20 })

interface Fixtures {
  events: BenchEvent[]
  channel: { setup: BenchEvent[]; posts: BenchEvent[] }
}

function report(results: Results<IngestVariant, BackendIngestResult>): Report {
  type Row = ReturnType<typeof rowsOf<BackendIngestResult>>
  const perEvent = (cores: (r: BackendIngestResult) => number) => (r: BackendIngestResult) => cpuPerUnitUs(cores(r), r.eventsPerSec)
  // `servers`: the Redis and PostgreSQL rows, one-sided where the other column is an embedded node
  const group = (row: Row, servers: Row) => [
    row('accepted', 'ev/s', (r) => r.eventsPerSec),
    row(
      'node CPU per accepted event',
      'µs',
      perEvent((r) => r.relayCores),
    ),
    servers(
      'redis-server CPU per accepted event',
      'µs',
      perEvent((r) => r.redisCores),
    ),
    servers(
      'postgres server CPU per accepted event',
      'µs',
      perEvent((r) => r.postgresCores),
    ),
    row('OK latency p50', 'ms', (r) => r.okLatency.p50Ms),
    row('OK latency p99', 'ms', (r) => r.okLatency.p99Ms),
    row('event-loop delay p99', 'ms', (r) => r.loopDelayP99Ms),
    row('node CPU', 'cores', (r) => r.relayCores),
  ]
  const vsSqlite = 'PostgreSQL + Redis vs SQLite'
  const kind9 = rowsOf(results['postgres kind-9'], results.postgres, 'kind 9 vs kind 1, both on PostgreSQL')
  const figures = [
    ...group(rowsOf(results.postgres, results.sqlite, vsSqlite), rowsOf(results.postgres, undefined, vsSqlite)),
    ...group(kind9, kind9),
  ]
  const setupS = median((results['postgres kind-9'] ?? []).flatMap((o) => (o.ok ? [o.value.setupMs / 1000] : [])))
  return {
    figures,
    notes: [
      `ingest-pg: the kind-1 connections are not authenticated; the kind-9 channel's set-up (not timed) took ${setupS.toFixed(1)} s`,
      ...INGEST_VARIANTS.flatMap((v) => outcomeNotes(`ingest-pg ${v}`, results[v])),
    ],
  }
}

export const scenario = defineScenario({
  name: 'ingest-pg',
  describe: 'pipelined ingest into a node on PostgreSQL + Redis vs SQLite, and NIP-29 posts on PostgreSQL',
  needs: ['redis', 'postgres'],
  sides: () => INGEST_VARIANTS,
  prepare: async (ctx): Promise<Fixtures> => ({ events: corpusEvents(sizeOf(ctx).events), channel: channelPostEvents(sizeOf(ctx).events) }),
  measure: (variant: IngestVariant, _round, fx, ctx) => {
    const { events: _, ...load } = sizeOf(ctx)
    return ingestOnBackend(variant, { ...fx, ...load, dir: ctx.freshDir })
  },
  report: (results) => report(results),
})
