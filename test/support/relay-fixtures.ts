// Relays a test starts in this process, closed after it: one relay or a cluster of nodes on one Redis and one
// PostgreSQL database of the test file's own, with rate limits only the rate-limit tests ever meet.
import { randomBytes } from 'node:crypto'
import { afterAll, afterEach, beforeAll } from 'vitest'
import type { ConfigInput } from '../../src/infra/config'
import { DEFAULT_COMMUNITY, type RelayOptions } from '../../src/relay/relay'
import { createTestDatabase, type TestDatabase } from './postgres'
import { startTestRelay, type TestRelay } from './relay'
import { startTcpProxy, type TcpProxy } from './tcp-proxy'

/** Budgets high enough that only rate-limit.test.ts ever meets a rate limit. */
const GENEROUS = { ratePerSecond: 100_000, burst: 100_000 }
const GENEROUS_TIER = { events: GENEROUS, reqs: GENEROUS }

/**
 * Also the per-IP limits every test client shares (all connect from 127.0.0.1, and in cluster mode the
 * per-IP keys are global in the one Redis every test file uses): only the tests of those limits meet them.
 */
export function withGenerousRates(overrides: ConfigInput): ConfigInput {
  return {
    ...overrides,
    rateLimits: { human: GENEROUS_TIER, connectionsPerIp: GENEROUS, apiPerIp: GENEROUS, authPerIp: GENEROUS, ...overrides.rateLimits },
    limits: { maxConnectionsPerIp: GENEROUS.burst, maxPendingUpgradesPerIp: GENEROUS.burst, ...overrides.limits },
  }
}

/** Registers an afterEach that closes every relay started through the returned `start`. */
export function useRelays() {
  const open: TestRelay[] = []
  afterEach(async () => {
    await Promise.all(open.splice(0).map((r) => r.close()))
  })
  return {
    async start(overrides: ConfigInput = {}, dataDir?: string, opts: RelayOptions = {}): Promise<TestRelay> {
      const r = await startTestRelay(withGenerousRates(overrides), dataDir, opts)
      open.push(r)
      return r
    },
    /**
     * A relay reached through a TCP proxy the test can stall or cut. The default community is bound to the
     * proxy's host:port as well, as an operator binds the address a proxy in front serves: NIP-42 AUTH names it.
     */
    async startBehindProxy(overrides: ConfigInput = {}): Promise<{ relay: TestRelay; proxy: TcpProxy }> {
      let relayPort = 0
      const proxy = await startTcpProxy(() => relayPort)
      const hosts = [...DEFAULT_COMMUNITY.hosts, `127.0.0.1:${proxy.port}`]
      const relay = await this.start({ communities: [{ ...DEFAULT_COMMUNITY, hosts }], ...overrides }).catch(async (error: unknown) => {
        await proxy.close()
        throw error
      })
      relayPort = relay.port
      const close = relay.close.bind(relay)
      relay.close = async (opts) => {
        await proxy.close()
        await close(opts)
      }
      return { relay, proxy }
    },
    /** forget a relay the test closed itself (e.g. to restart on the same data directory) */
    forget(r: TestRelay) {
      const i = open.indexOf(r)
      if (i >= 0) open.splice(i, 1)
    },
  }
}

/** The shared Redis the cluster tests use (each test keeps to its own community id, so its own keys). */
export const REDIS_URL = 'redis://127.0.0.1:6379'

/**
 * A cluster for a test file: one PostgreSQL database of the file's own (dropped after it), one relay key all
 * its nodes share (they verify each other's control messages with it), Redis at REDIS_URL unless `extra`
 * says otherwise. `nodes(n)` starts n nodes serving a fresh community, so its Redis keys are its own too.
 */
export function useCluster(relays: ReturnType<typeof useRelays>) {
  let db: TestDatabase | undefined
  const relaySecretKey = randomBytes(32).toString('hex')
  beforeAll(async () => {
    db = await createTestDatabase()
  })
  afterAll(async () => {
    await db?.drop()
  })
  const databaseUrl = () => {
    if (!db) throw new Error('useCluster: the database is created in beforeAll')
    return db.url
  }
  return {
    relaySecretKey,
    databaseUrl,
    /** `opts(i)`: node i's relay options (a wrapped store, say) */
    async nodes(n: number, extra: ConfigInput = {}, opts: (i: number) => RelayOptions = () => ({})) {
      const id = `c-${randomBytes(5).toString('hex')}`
      const host = `${id}.test`
      const config: ConfigInput = {
        redisUrl: REDIS_URL,
        databaseUrl: databaseUrl(),
        relaySecretKey,
        communities: [{ id, hosts: [host] }],
        ...extra,
      }
      const started: TestRelay[] = []
      for (let i = 0; i < n; i++) started.push(await relays.start(config, undefined, opts(i)))
      return { id, host, nodes: started }
    },
  }
}
