import { Redis } from 'ioredis'
import { afterEach, describe, expect, it } from 'vitest'
import { eventually } from '../../support/eventually'
import { describeBusContract } from './bus.contract'
import { collect, uniqueChannel } from './bus-harness'
import { type RedisNode, SHARED_REDIS_URL, startRedisNode } from './redis-node'

describeBusContract('redis', async ({ unsubscribeDebounceMs }) => {
  const a = await startRedisNode(SHARED_REDIS_URL, 'node-a', { unsubscribeDebounceMs })
  const b = await startRedisNode(SHARED_REDIS_URL, 'node-b', { unsubscribeDebounceMs })
  return { a: a.bus, b: b.bus, close: async () => void (await Promise.all([a.close(), b.close()])) }
})

describe('redis bus', () => {
  let node: RedisNode | undefined
  let raw: Redis | undefined

  afterEach(async () => {
    await node?.close()
    raw?.disconnect()
    node = raw = undefined
  })

  it('subscribes the backend once per channel however many watchers it has (PUBSUB NUMSUB)', async () => {
    node = await startRedisNode(SHARED_REDIS_URL, 'numsub')
    raw = new Redis(SHARED_REDIS_URL)
    const ch = uniqueChannel('numsub')
    collect(node.bus.watch(ch))
    collect(node.bus.watch(ch))
    await eventually(() => node!.bus.stats(ch).subscribes === 1, 'the subscribe')
    expect(await raw.pubsub('NUMSUB', ch)).toEqual([ch, 1])
    expect(node.subscribers).toHaveLength(1)
  })

  it('drops and counts a message published without a node id, and keeps delivering the next ones', async () => {
    node = await startRedisNode(SHARED_REDIS_URL, 'strict')
    raw = new Redis(SHARED_REDIS_URL)
    const ch = uniqueChannel('foreign')
    const got = collect(node.bus.watch(ch))
    await eventually(() => node!.bus.stats(ch).subscribes === 1, 'the subscribe')
    await raw.publish(ch, 'no envelope')
    await raw.publish(ch, 'someone-else\n{"kind":1}')
    await eventually(() => got.items.length === 1, 'the message')
    expect(got.items).toEqual(['{"kind":1}'])
    expect(node.bus.malformed).toBe(1)
  })

  it('stops its bridge and closes the subscriber connection when the bus closes', async () => {
    const n = await startRedisNode(SHARED_REDIS_URL, 'closing')
    const ch = uniqueChannel('closing')
    collect(n.bus.watch(ch))
    await eventually(() => n.bus.stats(ch).subscribes === 1, 'the subscribe')
    await n.bus.close()
    await eventually(() => n.events.some((e) => e.type === 'stopped' && e.kind === 'bus-bridge'), 'the bus bridge stopped')
    expect(n.subscribers[0]!.status).toBe('end')
    await n.kernel.shutdown()
    n.publisher.disconnect()
  })
})
