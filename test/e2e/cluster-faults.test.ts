import { filter, firstValueFrom, type Observable, ReplaySubject } from 'rxjs'
import { afterAll, describe, expect, it } from 'vitest'
import type { SupervisionEvent } from '../../src/actors/kernel'
import { openPostgresEventStore } from '../../src/infra/store/postgres/postgres-event-store'
import { STORE_DEADLINE_MS } from '../../src/infra/store/postgres/postgres-schema'
import { prefixOf } from '../../src/protocols/reasons'
import { makeKeys, type SignedEvent } from '../support/events'
import { eventually } from '../support/eventually'
import { httpGet } from '../support/http'
import { metric } from '../support/metrics'
import { type PrivateRedis, startPrivateRedis } from '../support/redis-server'
import type { TestRelay } from '../support/relay'
import { client, count, fresh, idsOf, type Ok, publish, publishNew, reqEvents } from '../support/relay-client'
import { useCluster, useRelays } from '../support/relay-fixtures'
import { startTcpProxy, type TcpProxy, type TcpProxyOptions } from '../support/tcp-proxy'
import type { TestClient } from '../support/ws-client'

/**
 * Backend outages in cluster mode (architecture §6.7, §10): each test kills its own redis-server or cuts
 * its own path to PostgreSQL; the shared servers other files use are never touched.
 */
describe('a cluster node when a backend goes away', () => {
  const relays = useRelays()
  const cluster = useCluster(relays)
  const cleanups: (() => Promise<void>)[] = []
  afterAll(async () => {
    for (const c of cleanups.splice(0).reverse()) await c()
  })

  const nodes = (n: number, backends: { redisUrl: string; databaseUrl: string }) => cluster.nodes(n, backends)

  async function privateRedis(): Promise<PrivateRedis> {
    const r = await startPrivateRedis()
    cleanups.push(() => r.stop())
    return r
  }

  async function proxyTo(port: number, whenCut: TcpProxyOptions['whenCut']): Promise<TcpProxy> {
    const p = await startTcpProxy(port, { whenCut })
    cleanups.push(() => p.close())
    return p
  }

  /** Every supervision event of the bridge from now on, replayed to late readers. */
  function bridgeEvents(r: TestRelay): Observable<SupervisionEvent> {
    const seen = new ReplaySubject<SupervisionEvent>()
    r.relay.supervision$.pipe(filter((e) => 'path' in e && e.path === 'bridges/bus')).subscribe(seen)
    return seen
  }

  const readiness = async (r: TestRelay) => (await httpGet(r, '/health/ready')).status

  /** Polls external state (a restarted server, a reconnecting pool) until `done`, at most `ms`. */
  it('fails admission closed while Redis is down, keeps serving stored events, and heals by itself when Redis returns', async () => {
    const redis = await privateRedis()
    const {
      host,
      nodes: [a, b],
    } = await nodes(2, { redisUrl: redis.url, databaseUrl: cluster.databaseUrl() })
    const keys = makeKeys()
    // connections are admitted per IP through Redis too: these are opened while it answers
    const [onA, onB, readerB] = [await client(a!, host), await client(b!, host), await client(b!, host)]
    await reqEvents(onB, [{ authors: [keys.pubkey] }], 'live')
    const stored = [await publishNew(onA, keys), await publishNew(onA, keys)]
    await onB.next((f) => f[0] === 'EVENT' && f[1] === 'live' && (f[2] as { id: string }).id === stored[1]!.event.id)
    const supervision = bridgeEvents(b!)
    expect(await readiness(b!)).toBe(200)

    await redis.kill()
    const refused = await publish(onA, fresh(keys))
    expect(refused.accepted).toBe(false)
    expect(refused.message).toBe('rate-limited: admission unavailable')
    // reads are served from PostgreSQL on the connections already open
    expect(idsOf(await reqEvents(readerB, [{ authors: [keys.pubkey] }])).sort()).toEqual(idsOf(stored.map((s) => s.event)).sort())
    expect(await count(readerB, [{ authors: [keys.pubkey] }])).toBe(stored.length)
    expect(await readiness(a!)).toBe(503)
    expect(await readiness(b!)).toBe(503)
    // a new connection is admitted by this node's own per-IP limit and can read, but not write
    const late = await client(b!, host)
    expect(idsOf(await reqEvents(late, [{ authors: [keys.pubkey] }])).sort()).toEqual(idsOf(stored.map((s) => s.event)).sort())
    expect((await publish(late, fresh(keys))).message).toBe('rate-limited: admission unavailable')
    late.close()
    // the bridge saw its connection drop and scheduled a reconnect
    await firstValueFrom(supervision.pipe(filter((e) => e.type === 'backoff')))
    // B's live subscription may miss what other nodes accept until the bridge is back: it is closed, saying so
    const gap = await onB.next((f) => f[0] === 'CLOSED' && f[1] === 'live')
    expect(String(gap[2])).toMatch(/^error: live events from other nodes were interrupted/)
    expect(await metric(b!, 'apiary_subscriptions_lost_total')).toBeGreaterThanOrEqual(1)

    await redis.restart()
    await firstValueFrom(supervision.pipe(filter((e) => e.type === 'restarted')))
    // the client subscribes again (as told), and live delivery A → B resumes once A's command connection and
    // B's bridge are both back: publish markers (bounded) until one reaches B's new subscription
    let live = ''
    for (let attempt = 0; live === '' && attempt < 30; attempt++) {
      const subId = `live-${attempt}`
      await reqEvents(onB, [{ authors: [keys.pubkey], since: Math.floor(Date.now() / 1000) }], subId)
      // until B's bridge has confirmed the channel again, a REQ gets its stored page and then CLOSED "error:"
      const refused = await onB.next((f) => f[0] === 'CLOSED' && f[1] === subId, 500).catch(() => undefined)
      if (!refused) live = subId
      else expect(String(refused[2])).toMatch(/^error: live events from other nodes are unavailable/)
    }
    const markers = new Set<string>()
    let crossed: string | undefined
    // rejects (and so fails the loop below) when no marker arrived within 15 s
    const arrival = onB
      .next((f) => f[0] === 'EVENT' && f[1] === live && markers.has((f[2] as { id: string }).id), 15_000)
      .then((f) => {
        crossed = (f[2] as { id: string }).id
      })
    while (crossed === undefined) {
      const marker = fresh(keys)
      if ((await publish(onA, marker)).accepted) markers.add(marker.event.id)
      await Promise.race([arrival, new Promise((r) => setTimeout(r, 250))])
    }
    expect((await publish(onB, fresh(keys))).accepted).toBe(true)
    expect(
      await eventually(
        () => readiness(a!),
        (s) => s === 200,
        'node A ready again',
        { intervalMs: 100 },
      ),
    ).toBe(200)
    expect(await readiness(b!)).toBe(200)
    expect(await reqEvents(await client(b!, host), [{ ids: [crossed] }])).toHaveLength(1)
  }, 40_000)

  // STORE_DEADLINE_MS bounds a round trip the driver would otherwise park; a write may meet it twice (ban
  // lookup, then commit), so an answer is due within two deadlines.
  const ANSWER_DUE_MS = 2 * STORE_DEADLINE_MS + 3_000

  it.each([
    ['when the server refuses connections', 'refuse'],
    ['when a pooler in front of it accepts connections and drops them', 'accept-and-close'],
  ] as const)(
    'answers "error:" without hanging while PostgreSQL is unreachable (%s), accepts again once it is back, and loses no event it accepted',
    async (_, whenCut) => {
      const redis = await privateRedis()
      const proxy = await proxyTo(Number(new URL(cluster.databaseUrl()).port), whenCut)
      const viaProxy = new URL(cluster.databaseUrl())
      viaProxy.port = String(proxy.port)
      const {
        id,
        host,
        nodes: [a, b],
      } = await nodes(2, { redisUrl: redis.url, databaseUrl: viaProxy.toString() })
      const keys = makeKeys()
      const [onA, onB] = [await client(a!, host), await client(b!, host)]
      const accepted: string[] = []
      const send = async (c: TestClient, e: SignedEvent): Promise<Ok> => {
        c.sendRaw(`["EVENT",${e.raw}]`)
        // bounded: a parked store call fails this wait instead of the whole test timing out with no answer
        const f = await c.next((x) => x[0] === 'OK' && x[1] === e.event.id, ANSWER_DUE_MS)
        const ok = { accepted: f[2] as boolean, message: f[3] as string, prefix: prefixOf(f[3] as string) }
        if (ok.accepted) accepted.push(e.event.id)
        return ok
      }

      for (let i = 0; i < 10; i++) expect((await send(i % 2 ? onB : onA, fresh(keys))).accepted).toBe(true)
      // a burst in flight while the path is cut: each answer is a commit or an "error:", never silence
      const burst = Array.from({ length: 20 }, (_, i) => send(i % 2 ? onB : onA, fresh(keys)))
      proxy.cut()
      const refusedReq = onB.next((f) => f[0] === 'CLOSED' && f[1] === 'while-down', ANSWER_DUE_MS)
      onB.send(['REQ', 'while-down', { authors: [keys.pubkey] }])
      // concurrently: each of these may wait out a deadline
      const [burstOks, down, ready, reqWhileDown] = await Promise.all([
        Promise.all(burst),
        send(onA, fresh(keys)),
        readiness(b!),
        refusedReq,
      ])
      for (const ok of burstOks) expect(ok.accepted || ok.prefix === 'error').toBe(true)
      expect(down.accepted).toBe(false)
      expect(down.prefix).toBe('error')
      expect(ready).toBe(503)
      expect(prefixOf(String(reqWhileDown[2]))).toBe('error')

      proxy.restore()
      // the pools reconnect on their next query: the first writes after restore may still meet a dead connection
      const healed = await eventually(
        () => send(onA, fresh(keys)),
        (ok) => ok.accepted,
        'a write on node A accepted after the restore',
        { timeoutMs: ANSWER_DUE_MS, intervalMs: 100 },
      )
      expect(healed.accepted).toBe(true)
      for (let i = 0; i < 5; i++) expect((await send(i % 2 ? onB : onA, fresh(keys))).accepted).toBe(true)
      expect(await readiness(a!)).toBe(200)
      expect(await reqEvents(onB, [{ ids: [accepted.at(-1)!] }])).toHaveLength(1)

      // every OK true is durable: read back through a store of our own, straight to the server
      const store = await openPostgresEventStore({ url: cluster.databaseUrl(), groupCommitMaxEvents: 100, groupCommitMaxDelayMs: 1 })
      try {
        const rows = await store.query(id, [{ authors: [keys.pubkey], limit: 1000 }], { now: Math.floor(Date.now() / 1000) })
        const have = new Set(rows.map((r) => r.event.id))
        expect(accepted.filter((x) => !have.has(x))).toEqual([])
        expect(accepted.length).toBeGreaterThanOrEqual(16)
      } finally {
        await store.close()
      }
    },
    90_000,
  )
})
