// Child process: Apiary (createRelay from the built dist/) with bench settings. Forked by bench/child.ts; prints its URL.
// Rate limits are opened wide: the defaults (per human pubkey and per IP) would throttle the load generator,
// which is one IP and a handful of pubkeys. Everything else is the default configuration, plus whatever
// BENCH_APIARY_CONFIG (JSON, a ConfigInput) adds: bench/cluster.ts passes redisUrl, databaseUrl,
// relaySecretKey and a community bound to its own host that way.
import type { ConfigInput } from '../src/infra/config'
import { runRelayChild } from './child'

export const BENCH_RATE_LIMITS = {
  human: { events: { ratePerSecond: 1e6, burst: 1e6 }, reqs: { ratePerSecond: 1e6, burst: 1e6 } },
  connectionsPerIp: { ratePerSecond: 1e6, burst: 1e6 },
}

const extra = JSON.parse(process.env.BENCH_APIARY_CONFIG || '{}') as ConfigInput

await runRelayChild(async (dataDir) => {
  // the compiled package, as `npm start` and an embedding program run it: under tsx every function would carry
  // esbuild's __name property (a 256-byte property store per closure), which is not what production pays
  // (a path in a variable: the typecheck must not depend on dist/ having been built)
  const built: string = '../dist/index.js'
  const { createRelay } = (await import(built)) as typeof import('../src/index')
  // one load generator opens thousands of sockets from 127.0.0.1: the per-IP concurrent limit is lifted too
  const relay = createRelay({
    port: 0,
    host: '127.0.0.1',
    dataDir,
    logLevel: 'silent',
    rateLimits: BENCH_RATE_LIMITS,
    limits: { maxConnectionsPerIp: 1e6 },
    verifyThreads: 2,
    ...extra,
  })
  const url = await relay.listen()
  return { url, close: () => relay.close() }
})
