// Child process: Apiary from the built package (createRelay, as `npm start` and an embedding program run it),
// forked by bench/lib/relay-process.ts. Rate limits are opened wide: the defaults (per pubkey and per IP)
// would throttle the load generator, which is one IP and a handful of pubkeys. Everything else is the default
// configuration, then BENCH_APIARY_CONFIG, then the scenario's own config (cluster backends, a community, a port).
import { type ConfigInput, loadRelayPackage } from '../built-package'
import { knobs } from '../knobs'
import { runRelayChild } from '../lib/relay-child'

const WIDE_OPEN = { ratePerSecond: 1e6, burst: 1e6 }

await runRelayChild(async (dataDir, config) => {
  const { createRelay } = await loadRelayPackage()
  const input: ConfigInput = {
    port: 0,
    host: '127.0.0.1',
    dataDir,
    logLevel: 'silent',
    rateLimits: { human: { events: WIDE_OPEN, reqs: WIDE_OPEN }, connectionsPerIp: WIDE_OPEN, authPerIp: WIDE_OPEN },
    // one load generator opens thousands of sockets from 127.0.0.1
    limits: { maxConnectionsPerIp: 1e6, maxPendingUpgradesPerIp: 1e6 },
    verifyThreads: 2,
    ...(knobs.apiaryConfig as ConfigInput),
    ...(config as ConfigInput),
  }
  const relay = createRelay(input)
  const url = await relay.listen()
  return { url, close: () => relay.close() }
})
