// The bus contract on a real three-master Redis Cluster, wired as relay/backends.ts wires it: a Cluster command
// client publishes, and each bridge subscribes on a plain connection to one master (subscriberConnector).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawnBusBridge } from '../../../src/actors/bridges/bus-bridge'
import { createKernel } from '../../../src/actors/kernel'
import { createRedisBus, type RedisBus } from '../../../src/infra/bus/redis-bus'
import { subscriberConnectionOptions } from '../../../src/infra/bus/redis-subscriber'
import { createRedisClient, isCluster, type RedisClient, subscriberConnector } from '../../../src/infra/redis/connect'
import { eventually } from '../../support/eventually'
import { type PrivateRedisCluster, startRedisCluster } from '../../support/redis-cluster'
import { describeBusContract } from './bus.contract'
import { collect, uniqueChannel } from './bus-harness'
import { TEST_BUS_MAC } from './redis-node'

let server: PrivateRedisCluster
beforeAll(async () => {
  server = await startRedisCluster()
}, 30_000)
afterAll(async () => {
  await server?.stop()
})

interface ClusterBusNode {
  bus: RedisBus
  publisher: RedisClient
  /** the master port of every subscriber connection the bridge opened, newest last */
  subscriberPorts: number[]
  close(): Promise<void>
}

async function startNode(nodeId: string, unsubscribeDebounceMs = 100): Promise<ClusterBusNode> {
  const publisher = createRedisClient(server.url, { lazyConnect: true, enableOfflineQueue: false, commandTimeout: 1000 })
  publisher.on('error', () => {})
  await publisher.connect()
  const connect = subscriberConnector(server.url, subscriberConnectionOptions, publisher)
  const subscriberPorts: number[] = []
  const bus = createRedisBus({
    publisher,
    nodeId,
    unsubscribeDebounceMs,
    mac: TEST_BUS_MAC,
    connectSubscriber: () => {
      const client = connect()
      subscriberPorts.push(client.options.port ?? 0)
      return client
    },
  })
  const kernel = createKernel({ name: nodeId })
  spawnBusBridge(kernel, bus.link, { policy: { backoff: { minMs: 50, maxMs: 200, jitter: 0 } } })
  return {
    bus,
    publisher,
    subscriberPorts,
    close: async () => {
      await bus.close()
      await kernel.shutdown()
      publisher.disconnect()
    },
  }
}

describeBusContract('redis cluster', async ({ unsubscribeDebounceMs }) => {
  const [a, b] = [await startNode('node-a', unsubscribeDebounceMs), await startNode('node-b', unsubscribeDebounceMs)]
  return { a: a.bus, b: b.bus, close: async () => void (await Promise.all([a.close(), b.close()])) }
})

describe('redis bus on a cluster', () => {
  it('delivers between nodes subscribed on different masters, since PUBLISH reaches every node', async () => {
    const a = await startNode('spread-a')
    const nodes = [a]
    try {
      const ch = uniqueChannel('spread')
      const onA = collect(a.bus.watch(ch))
      await eventually(() => a.bus.stats(ch).subscribes === 1, 'the subscribe on A')
      // another node whose bridge subscribed on a different master than A's
      let b: ClusterBusNode | undefined
      for (let i = 0; i < 10 && !b; i++) {
        const candidate = await startNode(`spread-b${i}`)
        nodes.push(candidate)
        collect(candidate.bus.watch(ch))
        await eventually(() => candidate.bus.stats(ch).subscribes === 1, 'the subscribe on the candidate')
        if (candidate.subscriberPorts[0] !== a.subscriberPorts[0]) b = candidate
      }
      if (!b) throw new Error('every subscriber landed on one master')
      const onB = collect(b.bus.watch(ch))
      expect(isCluster(b.publisher)).toBe(true)
      await b.bus.publish(ch, 'from b')
      await a.bus.publish(ch, 'from a')
      await eventually(() => onA.items.length === 1 && onB.items.length === 1, 'the message on both buses')
      expect([onA.items, onB.items]).toEqual([['from b'], ['from a']])
    } finally {
      await Promise.all(nodes.map((n) => n.close()))
    }
  })
})
