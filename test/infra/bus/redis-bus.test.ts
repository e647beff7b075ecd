import { Redis } from 'ioredis'
import { afterEach, describe, expect, it } from 'vitest'
import { eventually } from '../../support/eventually'
import { describeBusContract } from './bus.contract'
import { collect, uniqueChannel } from './bus-harness'
import { type RedisNode, SHARED_REDIS_URL, startRedisNode, TEST_BUS_MAC } from './redis-node'

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

  it('drops and counts a message without a node id or without the cluster MAC, and keeps delivering genuine ones', async () => {
    node = await startRedisNode(SHARED_REDIS_URL, 'strict')
    raw = new Redis(SHARED_REDIS_URL)
    const ch = uniqueChannel('foreign')
    const got = collect(node.bus.watch(ch))
    await eventually(() => node!.bus.stats(ch).subscribes === 1, 'the subscribe')
    const signed = (body: string) => TEST_BUS_MAC.sign(ch, body) + body
    await raw.publish(ch, 'no envelope')
    await raw.publish(ch, 'someone-else\n{"kind":1}')
    await raw.publish(ch, `${'A'.repeat(22)}someone-else\n{"kind":1}`)
    // signed for another channel: the channel is part of what the MAC covers
    await raw.publish(ch, TEST_BUS_MAC.sign(`${ch}x`, 'someone-else\n{"kind":1}') + 'someone-else\n{"kind":1}')
    await raw.publish(ch, signed('someone-else\n{"kind":2}'))
    await eventually(() => got.items.length === 1, 'the message')
    expect(got.items).toEqual(['{"kind":2}'])
    expect(node.bus.malformed).toBe(2)
    expect(node.bus.forged).toBe(2)
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
