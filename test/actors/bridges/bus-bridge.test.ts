import { once } from 'node:events'
import { filter, firstValueFrom } from 'rxjs'
import { afterEach, describe, expect, it } from 'vitest'
import type { SupervisionEvent } from '../../../src/actors/kernel'
import { BusError } from '../../../src/infra/bus/bus'
import { collect, uniqueChannel } from '../../infra/bus/bus-harness'
import { type RedisNode, startRedisNode } from '../../infra/bus/redis-node'
import { eventually } from '../../support/eventually'
import { type PrivateRedis, startPrivateRedis } from '../../support/redis-server'

// Short, jitter-free backoff so the fault tests take milliseconds; production uses busBridgePolicy.
const quickBackoff = { backoff: { minMs: 50, maxMs: 200, jitter: 0 } }

const bridgeEvents = (node: RedisNode, type: SupervisionEvent['type']) =>
  node.events.filter((e) => e.type === type && 'kind' in e && e.kind === 'bus-bridge')

function nextBridgeEvent(node: RedisNode, type: SupervisionEvent['type']): Promise<SupervisionEvent> {
  return firstValueFrom(node.kernel.supervision$.pipe(filter((e) => e.type === type && 'kind' in e && e.kind === 'bus-bridge')))
}

describe('bus bridge supervision (private redis-server, killed and restarted)', () => {
  let redis: PrivateRedis
  const nodes: RedisNode[] = []

  afterEach(async () => {
    await Promise.all(nodes.splice(0).map((node) => node.close()))
    await redis?.stop()
  })

  async function startNode(nodeId: string): Promise<RedisNode> {
    const node = await startRedisNode(redis.url, nodeId, { policy: quickBackoff })
    nodes.push(node)
    return node
  }

  it('crashes and backs off when Redis dies, then reconnects by itself, resubscribes, and delivery resumes', async () => {
    redis = await startPrivateRedis()
    const a = await startNode('node-a')
    const b = await startNode('node-b')
    const ch = uniqueChannel('fault')
    const got = collect(b.bus.watch(ch))
    await eventually(() => b.bus.stats(ch).subscribes === 1, 'the subscribe on B')
    await a.bus.publish(ch, 'before')
    await eventually(() => got.items.length === 1, 'the message')

    const backoff = nextBridgeEvent(b, 'backoff')
    const publisherClosed = once(a.publisher, 'close')
    await redis.kill()
    await backoff
    expect(bridgeEvents(b, 'crashed')[0]).toMatchObject({ msgType: 'Down', error: expect.any(BusError) })

    await publisherClosed
    const refused = a.bus.publish(ch, 'during')
    await expect(refused).rejects.toBeInstanceOf(BusError)
    await expect(refused).rejects.toMatchObject({ code: 'APIARY_BUS_UNAVAILABLE' })

    const publisherReady = once(a.publisher, 'ready')
    await redis.restart()
    await eventually(() => b.bus.stats(ch).subscribes === 2, 'the second subscribe on B')
    await publisherReady
    await a.bus.publish(ch, 'after')
    await eventually(() => got.items.length === 2, 'the second message')
    expect(got.items).toEqual(['before', 'after'])
    expect(bridgeEvents(b, 'restarted').length).toBeGreaterThanOrEqual(1)
    expect(bridgeEvents(b, 'gave-up')).toEqual([])
  })

  it('keeps retrying its first connection, with growing backoff, until Redis is up', async () => {
    redis = await startPrivateRedis()
    await redis.kill()
    const node = await startRedisNode(redis.url, 'late', { policy: quickBackoff, redisIsDown: true })
    nodes.push(node)
    const ch = uniqueChannel('late')
    collect(node.bus.watch(ch))
    await eventually(() => bridgeEvents(node, 'backoff').length >= 3, 'three backoffs')
    const delays = bridgeEvents(node, 'backoff').map((e) => (e as { delayMs: number }).delayMs)
    expect(delays.slice(0, 3)).toEqual([50, 100, 200])
    // the crash is on the piped-back outcome of the sync (the handler never waits on Redis)
    expect(bridgeEvents(node, 'crashed')[0]).toMatchObject({ msgType: 'Synced', error: expect.any(BusError) })
    await redis.restart()
    await eventually(() => node.bus.stats(ch).subscribes === 1, 'the subscribe once Redis is up')
  })

  it('crashes, backs off and catches up when Redis keeps the socket open but stops answering a subscribe', async () => {
    redis = await startPrivateRedis()
    const node = await startRedisNode(redis.url, 'frozen', { policy: quickBackoff, syncDeadlineMs: 300 })
    nodes.push(node)
    const first = uniqueChannel('frozen')
    collect(node.bus.watch(first))
    await eventually(() => node.bus.stats(first).subscribes === 1, 'the subscribe')
    redis.pause()
    const crashed = nextBridgeEvent(node, 'crashed')
    const later = uniqueChannel('frozen-later')
    const got = collect(node.bus.watch(later))
    // the subscribe never answers: past the deadline the sync fails, visibly, instead of hanging the bridge
    expect(await crashed).toMatchObject({ msgType: 'Synced', error: expect.any(BusError) })
    redis.resume()
    // confirmed by the session the restarted bridge opened (a late answer to the frozen one does not count)
    await node.bus.ready(later)
    const other = await startNode('frozen-publisher')
    await other.bus.publish(later, 'after the freeze')
    await eventually(() => got.items.length === 1, 'the message')
    expect(got.items).toEqual(['after the freeze'])
  })
})
