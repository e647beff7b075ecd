// Child process: Apiary (createRelay from the built dist/) with bench settings. Forked by bench/child.ts; prints its URL.
// Rate limits are opened wide: the defaults (per human pubkey and per IP) would throttle the load generator,
// which is one IP and a handful of pubkeys. Everything else is the default configuration, plus whatever
// BENCH_APIARY_CONFIG (JSON, a ConfigInput) adds: bench/cluster.ts passes redisUrl, databaseUrl,
// relaySecretKey and a community bound to its own host that way.
// BENCH_APIARY_THREADS (JSON, config `threads`) is merged last, in every scenario: an operator's A/B of the
// worker thread priorities, e.g. '{"writePathNice":0,"readNice":0}'.
// BENCH_SLOW_READ_MS (embedded only): the SQLite event store is wrapped so that queries marked with
// `#t: ["bench-slow"]` take that long (bench/slow-read-store.ts; the `slow-read` scenario).
import { join } from 'node:path'
import type { ConfigInput } from '../src/infra/config'
import type { EventStore } from '../src/infra/store/event-store'
import { runRelayChild } from './child'
import { withSlowReads } from './slow-read-store'

export const BENCH_RATE_LIMITS = {
  human: { events: { ratePerSecond: 1e6, burst: 1e6 }, reqs: { ratePerSecond: 1e6, burst: 1e6 } },
  connectionsPerIp: { ratePerSecond: 1e6, burst: 1e6 },
}

const extra = JSON.parse(process.env.BENCH_APIARY_CONFIG || '{}') as ConfigInput
const slowReadMs = Number(process.env.BENCH_SLOW_READ_MS || 0)

await runRelayChild(async (dataDir) => {
  // the compiled package, as `npm start` and an embedding program run it: under tsx every function would carry
  // esbuild's __name property (a 256-byte property store per closure), which is not what production pays
  // (a path in a variable: the typecheck must not depend on dist/ having been built)
  const built: string = '../dist/index.js'
  const { createRelay, loadConfig } = (await import(built)) as typeof import('../src/index')
  // one load generator opens thousands of sockets from 127.0.0.1: the per-IP concurrent limit is lifted too
  const input: ConfigInput = {
    port: 0,
    host: '127.0.0.1',
    dataDir,
    logLevel: 'silent',
    rateLimits: BENCH_RATE_LIMITS,
    limits: { maxConnectionsPerIp: 1e6 },
    verifyThreads: 2,
    ...extra,
    ...(process.env.BENCH_APIARY_THREADS ? { threads: JSON.parse(process.env.BENCH_APIARY_THREADS) as ConfigInput['threads'] } : {}),
  }
  let eventStore: EventStore | undefined
  if (slowReadMs > 0) {
    const config = loadConfig({ overrides: input })
    if (config.databaseUrl !== '') throw new Error('BENCH_SLOW_READ_MS wraps the embedded SQLite store only')
    // the store embedded() in src/relay/backends.ts opens, on the file it opens, with the same settings
    const sqlite: string = '../dist/infra/store/sqlite-event-store.js'
    const { openSqliteEventStore } = (await import(sqlite)) as typeof import('../src/infra/store/sqlite/sqlite-event-store')
    const file = join(config.dataDir, 'apiary.sqlite')
    eventStore = withSlowReads(
      openSqliteEventStore({
        file,
        groupCommitMaxEvents: config.store.groupCommitMaxEvents,
        groupCommitMaxDelayMs: config.store.groupCommitMaxDelayMs,
      }),
      slowReadMs,
    )
  }
  const relay = createRelay(input, eventStore ? { eventStore } : {})
  const url = await relay.listen()
  return { url, close: () => relay.close() }
})
