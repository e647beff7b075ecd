// Child process: Apiary (createRelay) with bench settings. Forked by bench/child.ts; prints its URL.
// Rate limits are opened wide: the defaults (per human pubkey and per IP) would throttle the load generator,
// which is one IP and a handful of pubkeys. Everything else is the default configuration.
import { runRelayChild } from './child'

export const BENCH_RATE_LIMITS = {
  human: { events: { ratePerSecond: 1e6, burst: 1e6 }, reqs: { ratePerSecond: 1e6, burst: 1e6 } },
  connectionsPerIp: { ratePerSecond: 1e6, burst: 1e6 },
}

await runRelayChild(async (dataDir) => {
  const { createRelay } = await import('../src/relay')
  const relay = createRelay({ port: 0, host: '127.0.0.1', dataDir, logLevel: 'silent', rateLimits: BENCH_RATE_LIMITS, verifyThreads: 2 })
  const url = await relay.listen()
  return { url, close: () => relay.close() }
})
