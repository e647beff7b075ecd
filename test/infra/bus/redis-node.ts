import { Redis } from 'ioredis'
import { spawnBusBridge } from '../../../src/actors/bridges/bus-bridge'
import { createKernel, type Kernel, type SupervisionEvent, type SupervisionPolicy } from '../../../src/actors/kernel'
import { createBusMac, deriveBusMacKey } from '../../../src/infra/bus/bus-mac'
import { createRedisBus, type RedisBus } from '../../../src/infra/bus/redis-bus'
import { subscriberConnectionOptions } from '../../../src/infra/bus/redis-subscriber'

export const SHARED_REDIS_URL = 'redis://127.0.0.1:6379'

/** One cluster node as the composition root wires it: a kernel, a publisher, a RedisBus and its bridge. */
export interface RedisNode {
  bus: RedisBus
  kernel: Kernel
  publisher: Redis
  /** every supervision event of this node's kernel, in order */
  events: SupervisionEvent[]
  /** subscriber clients the bridge opened, newest last */
  subscribers: Redis[]
  close(): Promise<void>
}

/** The MAC every test node shares, as a cluster's nodes share the relay key. */
export const TEST_BUS_MAC = createBusMac(deriveBusMacKey(new Uint8Array(32).fill(7)))

export async function startRedisNode(
  url: string,
  nodeId: string,
  opts: { unsubscribeDebounceMs?: number; policy?: Partial<SupervisionPolicy>; redisIsDown?: boolean; syncDeadlineMs?: number } = {},
): Promise<RedisNode> {
  // The publisher keeps ioredis's own reconnect: it is a plain command connection, the bus refuses to
  // publish while it is not ready. Its errors during an outage are expected; the bus reports them.
  const publisher = new Redis(url, { lazyConnect: true, enableOfflineQueue: false })
  publisher.on('error', () => {})
  if (opts.redisIsDown) void publisher.connect().catch(() => {})
  else await publisher.connect()
  const subscribers: Redis[] = []
  const bus = createRedisBus({
    publisher,
    nodeId,
    unsubscribeDebounceMs: opts.unsubscribeDebounceMs ?? 100,
    mac: TEST_BUS_MAC,
    connectSubscriber: () => {
      const client = new Redis(url, subscriberConnectionOptions)
      subscribers.push(client)
      return client
    },
  })
  const kernel = createKernel({ name: nodeId })
  const events: SupervisionEvent[] = []
  kernel.supervision$.subscribe((event) => events.push(event))
  spawnBusBridge(kernel, bus.link, { policy: opts.policy, syncDeadlineMs: opts.syncDeadlineMs })
  return {
    bus,
    kernel,
    publisher,
    events,
    subscribers,
    close: async () => {
      await bus.close()
      await kernel.shutdown()
      publisher.disconnect()
    },
  }
}
