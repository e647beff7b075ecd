import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ConfigInput } from '../../src/infra/config'
import { prefixOf } from '../../src/protocols/reasons'
import { makeKeys } from '../support/events'
import { eventually } from '../support/eventually'
import { httpGet } from '../support/http'
import { type PrivateRedisCluster, startRedisCluster } from '../support/redis-cluster'
import type { TestRelay } from '../support/relay'
import { client, count, fresh, idsOf, newSubId, publish, publishNew, reqAnswer, reqEvents } from '../support/relay-client'
import { useCluster, useRelays } from '../support/relay-fixtures'
import type { TestClient } from '../support/ws-client'

/**
 * Two relay nodes on a Redis Cluster of three masters (APIARY_REDIS_URL=redis+cluster://...) and one
 * PostgreSQL database. A community's keys share one hash slot, so each community lives on one master; these
 * tests pick communities by the master that serves them and kill masters of their own cluster.
 */
describe('a cluster of nodes on a Redis Cluster', () => {
  const relays = useRelays()
  const cluster = useCluster(relays)

  const UNAVAILABLE = 'rate-limited: admission unavailable'

  /** A fresh community whose keys the master on `port` serves (or any master when `port` is absent). */
  async function communityOn(redis: PrivateRedisCluster, port?: number, not?: number): Promise<{ id: string; host: string; port: number }> {
    for (let i = 0; i < 500; i++) {
      const id = `c-${randomBytes(5).toString('hex')}`
      const master = await redis.masterOf(`apiary:{${id}}:x`)
      if ((port === undefined || master === port) && master !== not) return { id, host: `${id}.test`, port: master }
    }
    throw new Error('no community id found for that master')
  }

  async function twoNodes(
    redis: PrivateRedisCluster,
    communities: { id: string; host: string }[],
    extra: ConfigInput = {},
  ): Promise<TestRelay[]> {
    const { nodes } = await cluster.nodes(2, {
      redisUrl: redis.url,
      communities: communities.map((c) => ({ id: c.id, hosts: [c.host] })),
      ...extra,
    })
    return nodes
  }

  const readiness = async (r: TestRelay) => (await httpGet(r, '/health/ready')).status

  /**
   * A live subscription as a client keeps one: REQ again while the node answers CLOSED "error:" (its bus link
   * is down or was just interrupted), at most `ms`. Resolves with the subscription id that got its EOSE.
   */
  async function subscribeLive(c: TestClient, filters: object[], ms = 10_000): Promise<string> {
    const refusals: string[] = []
    const { subId } = await eventually(
      async () => {
        const subId = newSubId('live')
        const answer = await reqAnswer(c, subId, filters)
        if (answer[0] !== 'EOSE') refusals.push(answer[2] as string)
        return { subId, answer }
      },
      ({ answer }) => answer[0] === 'EOSE',
      'a live subscription',
      { timeoutMs: ms, intervalMs: 200 },
    )
    // every refusal on the way was one the client may retry
    expect(refusals.map(prefixOf).filter((p) => p !== 'error')).toEqual([])
    return subId
  }

  /** Publishes fresh events of `keys` on `from` until one reaches subscription `subId` on `to`, at most `ms`. */
  async function untilDelivered(
    from: TestClient,
    to: TestClient,
    subId: string,
    keys: ReturnType<typeof makeKeys>,
    ms = 15_000,
  ): Promise<string> {
    const sent = new Set<string>()
    let crossed: string | undefined
    // rejects, failing the test, when nothing arrived within ms
    const arrival = to
      .next((f) => f[0] === 'EVENT' && f[1] === subId && sent.has((f[2] as { id: string }).id), ms)
      .then((f) => {
        crossed = (f[2] as { id: string }).id
      })
    while (crossed === undefined) {
      const marker = fresh(keys)
      if ((await publish(from, marker)).accepted) sent.add(marker.event.id)
      await Promise.race([arrival, new Promise((r) => setTimeout(r, 250))])
    }
    return crossed
  }

  describe('with cluster-require-full-coverage no (each master serves its slots whatever the others do)', () => {
    let redis: PrivateRedisCluster
    beforeAll(async () => {
      redis = await startRedisCluster({ requireFullCoverage: false, nodeTimeoutMs: 2_000 })
    }, 30_000)
    afterAll(async () => {
      await redis?.stop()
    })

    it('delivers an event published on A to a live subscriber on B, and shares one rate budget across both nodes', async () => {
      const community = await communityOn(redis)
      const [a, b] = await twoNodes(redis, [community], {
        rateLimits: { human: { events: { ratePerSecond: 0.001, burst: 3 } }, connectionsPerIp: { ratePerSecond: 1000, burst: 1000 } },
      })
      const keys = makeKeys()
      const [onA, onB] = [await client(a!, community.host), await client(b!, community.host)]
      await reqEvents(onB, [{ authors: [keys.pubkey] }], 'live')
      const first = fresh(keys, { content: 'from A' })
      expect((await publish(onA, first)).accepted).toBe(true)
      const seen = await onB.next((f) => f[0] === 'EVENT' && f[1] === 'live')
      expect((seen[2] as { id: string }).id).toBe(first.event.id)
      // the budget (burst 3) is one Redis key on one master, whichever node a client reaches
      const rest = [await publish(onB, fresh(keys)), await publish(onA, fresh(keys)), await publish(onB, fresh(keys))]
      expect(rest.map((r) => r.accepted)).toEqual([true, true, false])
      expect(rest[2]!.prefix).toBe('rate-limited')
      expect(rest[2]!.message).not.toBe(UNAVAILABLE)
    })

    it('fails writes closed only for the communities of a master that dies, keeps the others writing and fanning out, serves reads, and heals when it returns', async () => {
      // one community per master, a live subscription to each on both nodes: every bus subscriber is a plain
      // connection to one master, and the master killed is one holding at least one of them
      const communities = await Promise.all(redis.ports.map((port) => communityOn(redis, port)))
      const [a, b] = await twoNodes(redis, communities)
      const [alice, bob] = [makeKeys(), makeKeys()]
      // every connection is opened while all masters answer (a new one is admitted per IP through Redis too)
      const on: { port: number; a: TestClient; b: TestClient }[] = []
      for (const c of communities) {
        const pair = { port: c.port, a: await client(a!, c.host), b: await client(b!, c.host) }
        await reqEvents(pair.a, [{ authors: [bob.pubkey] }], 'live')
        await reqEvents(pair.b, [{ authors: [bob.pubkey] }], 'live')
        on.push(pair)
      }
      // one subscriber connection per relay node, once each bridge has subscribed
      const subscribers = (ports: number[]) => Promise.all(ports.map((port) => redis.subscribersOn(port)))
      const total = (counts: number[]) => counts.reduce((x, y) => x + y, 0)
      const holding = await eventually(
        () => subscribers(redis.ports),
        (counts) => total(counts) === 2,
        'one subscriber connection per node',
        { intervalMs: 100 },
      )
      expect(total(holding)).toBe(2)
      const victim = redis.ports[holding.findIndex((n) => n > 0)]
      const doomed = on.find((x) => x.port === victim)!
      const spared = on.find((x) => x.port !== victim)!
      const stored = [await publishNew(doomed.a, alice), await publishNew(doomed.a, alice)]
      await untilDelivered(spared.a, spared.b, 'live', bob)

      await redis.kill(doomed.port)
      const started = performance.now()
      const refused = await publish(doomed.a, fresh(alice))
      const refusedAfterMs = performance.now() - started
      expect(refused).toMatchObject({ accepted: false, message: UNAVAILABLE })
      // one command timeout (1 s, relay/backends.ts) or ioredis's redirections running out, whichever is first
      expect(refusedAfterMs).toBeLessThan(3_000)
      expect((await publish(doomed.b, fresh(alice))).message).toBe(UNAVAILABLE)

      // the other masters' communities write as before, and their events still cross between the nodes: the
      // bridge whose subscriber was on the dead master reconnects to a live one (1 s backoff)
      const writeStarted = performance.now()
      expect((await publish(spared.a, fresh(bob))).accepted).toBe(true)
      expect(performance.now() - writeStarted).toBeLessThan(500)
      // the cluster as a whole still serves (cluster_state:ok), and no other node of ours would do better
      expect([await readiness(a!), await readiness(b!)]).toEqual([200, 200])
      // a node whose bus subscriber was on the dead master may have closed its live subscriptions with
      // "error:" (events from other nodes were missed meanwhile): subscribe again, as a client would
      const [liveOnA, liveOnB] = [
        await subscribeLive(spared.a, [{ authors: [bob.pubkey] }]),
        await subscribeLive(spared.b, [{ authors: [bob.pubkey] }]),
      ]
      await untilDelivered(spared.a, spared.b, liveOnB, bob)
      await untilDelivered(spared.b, spared.a, liveOnA, bob)
      const survivors = redis.ports.filter((port) => port !== victim)
      expect(total(await subscribers(survivors))).toBe(2)

      // reads of the dead master's communities come from PostgreSQL (REQs fall back to this node's own budget)
      expect(idsOf(await reqEvents(doomed.b, [{ authors: [alice.pubkey] }])).sort()).toEqual(idsOf(stored.map((s) => s.event)).sort())
      expect(await count(doomed.a, [{ authors: [alice.pubkey] }])).toBe(stored.length)

      await redis.restart(doomed.port)
      await redis.waitForState('ok')
      const healed = await eventually(
        () => publish(doomed.a, fresh(alice)),
        (ok) => ok.accepted,
        'a write accepted once the cluster healed',
        { timeoutMs: 10_000 },
      )
      expect(healed.accepted).toBe(true)
      expect((await publish(doomed.b, fresh(alice))).accepted).toBe(true)
    }, 60_000)
  })

  describe("with Redis's default cluster-require-full-coverage yes", () => {
    let redis: PrivateRedisCluster
    beforeAll(async () => {
      redis = await startRedisCluster({ nodeTimeoutMs: 1_000 })
    }, 30_000)
    afterAll(async () => {
      await redis?.stop()
    })

    it("fails every community's writes closed once the cluster marks a dead master failed, keeps serving reads, and heals when it returns", async () => {
      const doomed = await communityOn(redis)
      const spared = await communityOn(redis, undefined, doomed.port)
      const [a, b] = await twoNodes(redis, [doomed, spared])
      const keys = makeKeys()
      const [sparedA, sparedB] = [await client(a!, spared.host), await client(b!, spared.host)]
      const stored = await publishNew(sparedA, keys)

      await redis.kill(doomed.port)
      // the survivors answer CLUSTERDOWN for every slot once cluster-node-timeout has passed
      await redis.waitForState('fail')
      expect(await publish(sparedA, fresh(keys))).toMatchObject({ accepted: false, message: UNAVAILABLE })
      expect(await publish(sparedB, fresh(keys))).toMatchObject({ accepted: false, message: UNAVAILABLE })
      expect(idsOf(await reqEvents(sparedB, [{ authors: [keys.pubkey] }]))).toEqual([stored.event.id])
      // PING still answers, but a cluster that refuses every key is as good as a Redis that is down
      expect([await readiness(a!), await readiness(b!)]).toEqual([503, 503])

      await redis.restart(doomed.port)
      await redis.waitForState('ok')
      const healed = await eventually(
        () => publish(sparedA, fresh(keys)),
        (ok) => ok.accepted,
        'a write accepted once the cluster healed',
        { timeoutMs: 10_000 },
      )
      expect(healed.accepted).toBe(true)
      expect(
        await eventually(
          () => readiness(b!),
          (s) => s === 200,
          'node B ready again',
          { intervalMs: 100 },
        ),
      ).toBe(200)
    }, 60_000)
  })
})
