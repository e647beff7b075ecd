// logConnectionState against real servers we kill: one line per state change however many retries happen,
// and ioredis never falls back to printing "[ioredis] Unhandled error event" on stderr.
import { type Cluster, Redis } from 'ioredis'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { openSubscriber, subscriberConnectionOptions } from '../../../src/infra/bus/redis-subscriber'
import { createLogger } from '../../../src/infra/log'
import { createRedisClient, subscriberConnector } from '../../../src/infra/redis/connect'
import { logConnectionState } from '../../../src/infra/redis/connection-log'
import { startRedisCluster } from '../../support/redis-cluster'
import { startPrivateRedis } from '../../support/redis-server'

interface LogLine {
  level: number
  msg: string
  redis?: string
  node?: string
  cause?: string
  after?: string
}
const WARN = 40
const INFO = 30

/** A pino logger writing JSON lines into memory, as the relay's logger would to stdout. */
function memoryLogger() {
  const lines: LogLine[] = []
  const logger = createLogger('info', { write: (s: string) => void lines.push(JSON.parse(s) as LogLine) })
  return { logger, lines }
}

/** Resolves after `client` emitted `event` n more times (node's events.once would reject on an 'error'). */
function times(
  client: { on(e: string, f: () => void): unknown; off(e: string, f: () => void): unknown },
  event: string,
  n: number,
): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0
    const count = () => {
      if (++seen < n) return
      client.off(event, count)
      resolve()
    }
    client.on(event, count)
  })
}

// ioredis prints unhandled error events with console.error; anything on stderr at all would be a leak too
let printed: string[]
beforeEach(() => {
  printed = []
  const keep = (...args: unknown[]) => void printed.push(args.map(String).join(' '))
  vi.spyOn(console, 'error').mockImplementation(keep)
  vi.spyOn(console, 'warn').mockImplementation(keep)
  const write = process.stderr.write.bind(process.stderr)
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array, ...rest: unknown[]) => {
    printed.push(String(chunk))
    return write(chunk, ...(rest as []))
  })
})
afterEach(() => {
  vi.restoreAllMocks()
})

describe('redis connection log', () => {
  it("logs one 'lost' warning for an outage however many reconnects fail, one 'restored' line after it, and prints nothing", async () => {
    const server = await startPrivateRedis()
    const { logger, lines } = memoryLogger()
    const client = new Redis({
      port: server.port,
      host: '127.0.0.1',
      lazyConnect: true,
      enableOfflineQueue: false,
      retryStrategy: () => 20,
    })
    try {
      logConnectionState(client, 'commands', logger)
      await client.connect()
      expect(lines).toMatchObject([{ level: INFO, redis: 'commands', msg: 'redis connected' }])

      await server.kill()
      await times(client, 'reconnecting', 10)
      expect(lines.slice(1)).toEqual([
        expect.objectContaining({ level: WARN, redis: 'commands', msg: 'redis connection lost; reconnecting' }),
      ])

      const ready = times(client, 'ready', 1)
      await server.restart()
      await ready
      expect(lines.slice(2)).toEqual([
        expect.objectContaining({ level: INFO, redis: 'commands', msg: 'redis connection restored', after: lines[1]?.cause }),
      ])
      expect(lines).toHaveLength(3)
      expect(printed).toEqual([])
    } finally {
      client.disconnect()
      await server.stop()
    }
  })

  it("logs one 'unreachable' warning while a server is not there yet, then 'connected'", async () => {
    const server = await startPrivateRedis()
    await server.kill()
    const { logger, lines } = memoryLogger()
    const client = new Redis({ port: server.port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => 20 })
    try {
      logConnectionState(client, 'commands', logger)
      void client.connect().catch(() => {})
      await times(client, 'reconnecting', 10)
      const ready = times(client, 'ready', 1)
      await server.restart()
      await ready
      expect(lines).toEqual([
        expect.objectContaining({ level: WARN, msg: 'redis unreachable; retrying', cause: expect.stringContaining('ECONNREFUSED') }),
        expect.objectContaining({ level: INFO, msg: 'redis connected' }),
      ])
      expect(printed).toEqual([])
    } finally {
      client.disconnect()
      await server.stop()
    }
  })

  it('(the check above can fail) a client nobody listens to prints ioredis\'s "Unhandled error event"', async () => {
    const server = await startPrivateRedis()
    await server.kill()
    const bare = new Redis({ port: server.port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null })
    await bare.connect().catch(() => {})
    expect(printed.join('\n')).toContain('[ioredis] Unhandled error event')
    bare.disconnect()
  })

  it('prints nothing for a bus subscriber connection whose server dies, and reports the drop once', async () => {
    const server = await startPrivateRedis()
    try {
      const onDown = vi.fn()
      const session = await openSubscriber(subscriberConnector(server.url, subscriberConnectionOptions)(), { onMessage: () => {}, onDown })
      await session.subscribe(['apiary:{t}:ev:global'])
      await server.kill()
      await vi.waitFor(() => expect(onDown).toHaveBeenCalledTimes(1))
      // a second subscriber connection tried while the server is still down fails to open, also silently
      await expect(
        openSubscriber(subscriberConnector(server.url, subscriberConnectionOptions)(), { onMessage: () => {}, onDown }),
      ).rejects.toThrow(/connection lost/)
      expect(onDown).toHaveBeenCalledTimes(1)
      expect(printed).toEqual([])
    } finally {
      await server.stop()
    }
  })
})

describe('redis connection log on a cluster', () => {
  it('logs a dead master once as a node warning and once when it is back; the bus subscriber on it drops silently', async () => {
    const cluster = await startRedisCluster({ requireFullCoverage: false })
    const { logger, lines } = memoryLogger()
    const commands = createRedisClient(cluster.url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      commandTimeout: 500,
      retryStrategy: () => 50,
    }) as Cluster
    try {
      logConnectionState(commands, 'commands', logger)
      await commands.connect()
      // a live connection to every master, which the kill drops
      await Promise.all(commands.nodes('master').map((n) => n.ping()))
      const victim = cluster.ports[0]!
      const onVictim: string[] = []
      for (let i = 0; onVictim.length < 2; i++) if ((await cluster.masterOf(`{k${i}}`)) === victim) onVictim.push(`{k${i}}`)
      // one of the connections the bus bridge would open, taken in turn from the masters: the one on the victim
      const subscriberFor = subscriberConnector(cluster.url, subscriberConnectionOptions, commands)
      const candidates = Array.from({ length: 3 }, subscriberFor)
      expect(new Set(candidates.map((c) => c.options.port))).toEqual(new Set(cluster.ports))
      const subscriber = candidates.find((c) => c.options.port === victim)!
      const onDown = vi.fn()
      await openSubscriber(subscriber, { onMessage: () => {}, onDown })

      await cluster.kill(victim)
      await vi.waitFor(() => expect(onDown).toHaveBeenCalledTimes(1))
      // commands for the dead master's slots keep failing, each attempt a 'node error' inside ioredis
      for (let i = 0; i < 3; i++) await Promise.allSettled(onVictim.map((k) => commands.get(k)))
      const node = `127.0.0.1:${victim}`
      expect(lines.filter((l) => l.level === WARN)).toEqual([
        expect.objectContaining({ redis: 'commands', node, msg: 'redis cluster node unreachable; commands for its slots fail' }),
      ])

      await cluster.restart(victim)
      await cluster.waitForState('ok')
      await vi.waitFor(
        async () => {
          await Promise.allSettled(onVictim.map((k) => commands.get(k)))
          expect(lines.at(-1)).toMatchObject({ level: INFO, node, msg: 'redis cluster node connected again' })
        },
        { timeout: 10_000, interval: 100 },
      )
      expect(lines.filter((l) => l.node === node)).toHaveLength(2)
      expect(printed).toEqual([])
    } finally {
      commands.disconnect()
      await cluster.stop()
    }
  }, 30_000)
})
