import { Redis } from 'ioredis'
import { afterEach, describe, expect, it } from 'vitest'
import { eventsChannel } from '../../src/infra/redis/keys'
import { makeKeys } from '../support/events'
import { eventually } from '../support/eventually'
import { labelledMetric } from '../support/metrics'
import { client, fresh, publish, reqEvents } from '../support/relay-client'
import { REDIS_URL, useCluster, useRelays } from '../support/relay-fixtures'

/**
 * Write access to Redis is not a way into another node's live delivery: what a node publishes on the bus
 * carries a MAC under a key derived from the relay key, and a message without it is dropped and counted.
 */
describe('the Redis bus between the nodes of a cluster', () => {
  const relays = useRelays()
  const cluster = useCluster(relays)
  let redis: Redis | undefined
  afterEach(() => {
    redis?.disconnect()
    redis = undefined
  })

  it('never delivers live an event PUBLISHed straight into Redis, counts it, and still delivers the nodes’ own', async () => {
    const {
      id,
      host,
      nodes: [a, b],
    } = await cluster.nodes(2)
    const onA = await client(a!, host)
    const onB = await client(b!, host)
    await reqEvents(onB, [{ kinds: [1] }], 'live')
    redis = new Redis(REDIS_URL)
    const channel = eventsChannel(id)
    await eventually(
      async () => Number(((await redis!.pubsub('NUMSUB', channel)) as [string, number])[1]),
      (n) => n >= 1,
      'B subscribed',
    )
    // validly signed events the relay never accepted (a banned author's, a non-member's would look the same)
    const forged = [fresh(makeKeys(), { content: 'as a node would send it' }), fresh(makeKeys(), { content: 'with a made-up MAC' })]
    const before = await labelledMetric(b!, 'apiary_bus_rejected_total', { reason: 'mac' })
    await redis.publish(channel, `0f1e2d3c-0000-4000-8000-000000000000\n${forged[0]!.raw}`)
    await redis.publish(channel, `${'A'.repeat(22)}0f1e2d3c-0000-4000-8000-000000000000\n${forged[1]!.raw}`)
    // published after the forgeries on the same channel: once B delivers it, B has decided on them
    const genuine = fresh(makeKeys(), { content: 'through node A' })
    expect((await publish(onA, genuine)).accepted).toBe(true)
    const frame = await onB.next((f) => f[0] === 'EVENT' && f[1] === 'live' && (f[2] as { id: string }).id === genuine.event.id)
    const upTo = onB.frames.slice(0, onB.frames.indexOf(frame))
    const seen = upTo.filter((f) => f[0] === 'EVENT').map((f) => (f[2] as { id: string }).id)
    expect(seen).not.toContain(forged[0]!.event.id)
    expect(seen).not.toContain(forged[1]!.event.id)
    expect(await labelledMetric(b!, 'apiary_bus_rejected_total', { reason: 'mac' })).toBeGreaterThanOrEqual(before + 1)
  })
})
