import { randomBytes } from 'node:crypto'
import { filter, firstValueFrom, type Observable, ReplaySubject } from 'rxjs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SupervisionEvent } from '../../src/actors/kernel'
import type { ConfigInput } from '../../src/infra/config'
import { openPostgresEventStore } from '../../src/infra/store/postgres-event-store'
import { makeKeys, type SignedEvent } from '../support/events'
import { createTestDatabase, type TestDatabase } from '../support/postgres'
import { type PrivateRedis, startPrivateRedis } from '../support/redis-server'
import type { TestRelay } from '../support/relay'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy'
import type { TestClient } from '../support/ws-client'
import { client, count, fresh, httpGet, idsOf, type Ok, publish, publishNew, reqAnswer, reqEvents, useRelays } from './helpers'

/**
 * Backend outages in cluster mode (DESIGN §5–§7): each test kills its own redis-server or cuts its own path to
 * PostgreSQL; the shared servers other files use are never touched.
 */
describe('a cluster node when a backend goes away', () => {
  const relays = useRelays()
  let db: TestDatabase
  const relaySecretKey = randomBytes(32).toString('hex')
  const cleanups: (() => Promise<void>)[] = []
  beforeAll(async () => {
    db = await createTestDatabase()
  })
  afterAll(async () => {
    for (const c of cleanups.splice(0).reverse()) await c()
    await db.drop()
  })

  async function nodes(n: number, backends: { redisUrl: string; databaseUrl: string }) {
    const id = `c-${randomBytes(5).toString('hex')}`
    const host = `${id}.test`
    const config: ConfigInput = { ...backends, relaySecretKey, communities: [{ id, hosts: [host] }] }
    const started: TestRelay[] = []
    for (let i = 0; i < n; i++) started.push(await relays.start(config))
    return { id, host, nodes: started }
  }

  async function privateRedis(): Promise<PrivateRedis> {
    const r = await startPrivateRedis()
    cleanups.push(() => r.stop())
    return r
  }

  async function proxyTo(port: number): Promise<TcpProxy> {
    const p = await startTcpProxy(port)
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
  async function until<T>(ms: number, probe: () => Promise<T>, done: (v: T) => boolean): Promise<T> {
    const deadline = Date.now() + ms
    for (;;) {
      const v = await probe()
      if (done(v) || Date.now() > deadline) return v
      await new Promise((r) => setTimeout(r, 100))
    }
  }

  it('fails admission closed while Redis is down, keeps serving stored events, and heals by itself when Redis returns', async () => {
    const redis = await privateRedis()
    const { host, nodes: [a, b] } = await nodes(2, { redisUrl: redis.url, databaseUrl: db.url })
    const keys = makeKeys()
    // connections are admitted per IP through Redis too: these are opened while it answers
    const [onA, onB, readerB] = [await client(a!, host), await client(b!, host), await client(b!, host)]
    const stored = [await publishNew(onA, keys), await publishNew(onA, keys)]
    await reqEvents(onB, [{ authors: [keys.pubkey] }], 'live')
    const supervision = bridgeEvents(b!)
    expect(await readiness(b!)).toBe(200)

    await redis.kill()
    const refused = await publish(onA, fresh(keys))
    expect(refused.accepted).toBe(false)
    expect(refused.message).toBe('rate-limited: admission unavailable')
    // reads are served from PostgreSQL on connections already open
    expect(idsOf(await reqEvents(readerB, [{ authors: [keys.pubkey] }])).sort()).toEqual(idsOf(stored.map((s) => s.event)).sort())
    expect(await count(readerB, [{ authors: [keys.pubkey] }])).toBe(2)
    expect(await readiness(a!)).toBe(503)
    expect(await readiness(b!)).toBe(503)
    // the bridge noticed: its connection dropped and a reconnect is scheduled
    await firstValueFrom(supervision.pipe(filter((e) => e.type === 'backoff')))

    await redis.restart()
    const restartedAt = Date.now()
    await firstValueFrom(supervision.pipe(filter((e) => e.type === 'restarted')))
    // cross-node live delivery resumes once the bridge has resubscribed: publish markers until one crosses
    let crossed: string | undefined
    const markers: string[] = []
    while (!crossed && Date.now() - restartedAt < 15_000) {
      const marker = fresh(keys, { content: `marker ${markers.length}` })
      const ok = await publish(onA, marker)
      if (ok.accepted) markers.push(marker.event.id)
      crossed = await onB
        .next((f) => f[0] === 'EVENT' && f[1] === 'live' && markers.includes((f[2] as { id: string }).id), 300)
        .then(
          (f) => (f[2] as { id: string }).id,
          () => undefined,
        )
    }
    expect(crossed).toBeDefined()
    expect((await publish(onB, fresh(keys))).accepted).toBe(true)
    expect(await until(5_000, () => readiness(a!), (s) => s === 200)).toBe(200)
    expect(await readiness(b!)).toBe(200)
    // a new connection is admitted again
    expect(await reqEvents(await client(b!, host), [{ ids: [crossed!] }])).toHaveLength(1)
  }, 40_000)

  it('answers "error:" without hanging while PostgreSQL is unreachable, accepts again once it is back, and loses no event it accepted', async () => {
    const redis = await privateRedis()
    const proxy = await proxyTo(Number(new URL(db.url).port))
    const viaProxy = new URL(db.url)
    viaProxy.port = String(proxy.port)
    const { id, host, nodes: [a, b] } = await nodes(2, { redisUrl: redis.url, databaseUrl: viaProxy.toString() })
    const keys = makeKeys()
    const [onA, onB] = [await client(a!, host), await client(b!, host)]
    const accepted: string[] = []
    const send = async (c: TestClient, e: SignedEvent): Promise<Ok> => {
      // bounded: a hung store would fail this wait instead of the whole test timing out silently
      c.sendRaw(`["EVENT",${e.raw}]`)
      const f = await c.next((x) => x[0] === 'OK' && x[1] === e.event.id, 8_000)
      const ok = { accepted: f[2] as boolean, message: f[3] as string, prefix: String(f[3]).split(':')[0] }
      if (ok.accepted) accepted.push(e.event.id)
      return ok
    }

    for (let i = 0; i < 10; i++) expect((await send(i % 2 ? onB : onA, fresh(keys))).accepted).toBe(true)
    // a burst in flight while the path is cut: each answer is either a commit or an "error:", never silence
    const burst = Array.from({ length: 20 }, (_, i) => send(i % 2 ? onB : onA, fresh(keys)))
    proxy.cut()
    for (const ok of await Promise.all(burst)) expect(ok.accepted || ok.prefix === 'error').toBe(true)
    const down = await send(onA, fresh(keys))
    expect(down.accepted).toBe(false)
    expect(down.prefix).toBe('error')
    expect(await readiness(a!)).toBe(503)
    const closedReq = await reqAnswer(onB, 'while-down', [{ authors: [keys.pubkey] }])
    expect(closedReq[0]).toBe('CLOSED')
    expect(String(closedReq[2])).toMatch(/^error: /)

    proxy.restore()
    // the pool reconnects on its next query: the first writes after restore may still meet a dead connection
    const healed = await until(
      10_000,
      () => send(onA, fresh(keys)),
      (ok) => ok.accepted,
    )
    expect(healed.accepted).toBe(true)
    for (let i = 0; i < 5; i++) expect((await send(i % 2 ? onB : onA, fresh(keys))).accepted).toBe(true)
    expect(await readiness(a!)).toBe(200)

    // every OK true is durable: read back through a store of our own, straight to the server
    const store = await openPostgresEventStore({ url: db.url, groupCommitMaxEvents: 100, groupCommitMaxDelayMs: 1 })
    try {
      const rows = await store.query(id, [{ authors: [keys.pubkey], limit: 1000 }], { now: Math.floor(Date.now() / 1000) })
      const have = new Set(rows.map((r) => r.event.id))
      expect(accepted.filter((x) => !have.has(x))).toEqual([])
      expect(accepted.length).toBeGreaterThanOrEqual(16)
    } finally {
      await store.close()
    }
  }, 40_000)
})
