import { Redis } from 'ioredis'
import { describe, expect, it } from 'vitest'
import { eventsChannel } from '../../src/infra/redis/keys'
import { openPostgresCommunityStore } from '../../src/infra/store/postgres/postgres-community-store'
import { makeKeys, signEvent } from '../support/events'
import { eventually } from '../support/eventually'
import { auth, client, fresh, publish, relayUrlOf, reqEvents, until404 } from '../support/relay-client'
import { REDIS_URL, useCluster, useRelays } from '../support/relay-fixtures'

/** Two or three nodes of one cluster: one Redis, one PostgreSQL database (this file's own), one relay key. */
describe('a cluster of nodes on one Redis and one PostgreSQL', () => {
  const relays = useRelays()
  const cluster = useCluster(relays)
  const nodes = cluster.nodes

  it('delivers an event published on A to a live subscriber on B, and back', async () => {
    const {
      host,
      nodes: [a, b],
    } = await nodes(2)
    const onA = await client(a!, host)
    const onB = await client(b!, host)
    const keys = makeKeys()
    await reqEvents(onA, [{ authors: [keys.pubkey] }], 'live')
    await reqEvents(onB, [{ authors: [keys.pubkey] }], 'live')
    const first = fresh(keys, { content: 'from A' })
    expect((await publish(onA, first)).accepted).toBe(true)
    expect(((await onB.next((f) => f[0] === 'EVENT' && f[1] === 'live')) as [string, string, { id: string }])[2].id).toBe(first.event.id)
    const second = fresh(keys, { content: 'from B' })
    expect((await publish(onB, second)).accepted).toBe(true)
    const seenOnA = await onA.next((f) => f[0] === 'EVENT' && f[1] === 'live' && (f[2] as { id: string }).id === second.event.id)
    expect(seenOnA).toBeDefined()
  })

  it('subscribes a node to a community topic only while it has subscribers there', async () => {
    const {
      id,
      host,
      nodes: [a, b],
    } = await nodes(2)
    const redis = new Redis(REDIS_URL)
    const numsub = async () => Number(((await redis.pubsub('NUMSUB', eventsChannel(id))) as [string, number])[1])
    try {
      expect(await numsub()).toBe(0)
      const onA = await client(a!, host)
      await reqEvents(onA, [{ kinds: [1] }], 'x')
      const subscribers = (n: number) => eventually(numsub, (got) => got === n, `${n} node(s) subscribed`, { timeoutMs: 2_000 })
      // only A has an interest: B's Redis connection receives nothing for this community
      expect(await subscribers(1)).toBe(1)
      const onB = await client(b!, host)
      await reqEvents(onB, [{ kinds: [1] }], 'y')
      expect(await subscribers(2)).toBe(2)
    } finally {
      redis.disconnect()
    }
  })

  it('shares one rate budget across nodes', async () => {
    const {
      host,
      nodes: [a, b],
    } = await nodes(2, {
      rateLimits: { human: { events: { ratePerSecond: 0.001, burst: 3 } }, connectionsPerIp: { ratePerSecond: 1000, burst: 1000 } },
    })
    const keys = makeKeys()
    const [ca, cb] = [await client(a!, host), await client(b!, host)]
    const results = [
      await publish(ca, fresh(keys)),
      await publish(cb, fresh(keys)),
      await publish(ca, fresh(keys)),
      await publish(cb, fresh(keys)),
    ]
    expect(results.filter((r) => r.accepted)).toHaveLength(3)
    expect(results[3]!.prefix).toBe('rate-limited')
  })

  it('stores an event sent to two nodes once', async () => {
    const {
      host,
      nodes: [a, b],
    } = await nodes(2)
    const keys = makeKeys()
    const e = fresh(keys)
    const [ra, rb] = await Promise.all([publish(await client(a!, host), e), publish(await client(b!, host), e)])
    expect([ra.accepted, rb.accepted]).toEqual([true, true])
    expect([ra.prefix, rb.prefix].filter((p) => p === 'duplicate')).toHaveLength(1)
    expect(await reqEvents(await client(b!, host), [{ ids: [e.event.id] }])).toHaveLength(1)
  })

  it('converges when two nodes race on the same replaceable event', async () => {
    const {
      host,
      nodes: [a, b],
    } = await nodes(2)
    const keys = makeKeys()
    const at = Math.floor(Date.now() / 1000)
    const versions = Array.from({ length: 6 }, (_, i) => signEvent(keys, { kind: 0, created_at: at - (i % 3), content: `v${i}` }))
    const [ca, cb] = [await client(a!, host), await client(b!, host)]
    await Promise.all(versions.map((v, i) => publish(i % 2 ? cb : ca, v)))
    const newest = versions
      .filter((v) => v.event.created_at === at)
      .map((v) => v.event.id)
      .sort()[0]
    for (const c of [ca, cb]) expect((await reqEvents(c, [{ kinds: [0], authors: [keys.pubkey] }])).map((e) => e.id)).toEqual([newest])
  })

  it('closes a banned pubkey on every node with a blocked: frame, and refuses its next AUTH and write everywhere', async () => {
    const {
      id,
      host,
      nodes: [a, b],
    } = await nodes(2)
    const bad = makeKeys()
    const onB = await client(b!, host)
    expect((await auth(onB, bad, relayUrlOf(b!, host))).accepted).toBe(true)
    await a!.relay.banPubkey(id, bad.pubkey, 'spam')
    const notice = await onB.next((f) => f[0] === 'NOTICE')
    expect(String(notice[1])).toMatch(/^blocked: /)
    expect((await onB.closed).code).toBe(1008)
    const again = await client(a!, host)
    expect((await auth(again, bad, relayUrlOf(a!, host))).prefix).toBe('blocked')
    expect((await publish(again, fresh(bad))).prefix).toBe('blocked')
  })

  it('refuses a banned pubkey on every node even when the broadcast is lost (only the row was written)', async () => {
    const {
      id,
      host,
      nodes: [a, b],
    } = await nodes(2)
    const bad = makeKeys()
    const store = await openPostgresCommunityStore({ url: cluster.databaseUrl() })
    await store.banPubkey(id, bad.pubkey, 'quietly banned')
    await store.close()
    for (const node of [a!, b!]) {
      const c = await client(node, host)
      expect((await publish(c, fresh(bad))).prefix).toBe('blocked')
      expect((await auth(c, bad, relayUrlOf(node, host))).prefix).toBe('blocked')
    }
  })

  it('archives a community on every node: sockets closed, new connections refused with 404', async () => {
    const {
      id,
      host,
      nodes: [a, b],
    } = await nodes(2)
    const onA = await client(a!, host)
    const onB = await client(b!, host)
    expect(await a!.relay.archiveCommunity(id)).toBe(true)
    expect((await onA.closed).code).toBe(1008)
    expect((await onB.closed).code).toBe(1008)
    expect(await until404(a!, host)).toBe(true)
    expect(await until404(b!, host)).toBe(true)
  })

  it('closes an archived community at the next revalidation when the broadcast was lost', async () => {
    const {
      id,
      host,
      nodes: [a],
    } = await nodes(1, { revalidateSeconds: 1 })
    const onA = await client(a!, host)
    const store = await openPostgresCommunityStore({ url: cluster.databaseUrl() })
    expect(await store.archive(id, Math.floor(Date.now() / 1000))).toBe(true)
    await store.close()
    expect((await onA.closed).code).toBe(1008)
    expect(await until404(a!, host)).toBe(true)
  })
})
