import { randomBytes } from 'node:crypto'
import { filter, firstValueFrom, ReplaySubject } from 'rxjs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SupervisionEvent } from '../../src/actors/kernel'
import { openPostgresEventStore } from '../../src/infra/store/postgres/postgres-event-store'
import { prefixOf } from '../../src/protocols/reasons'
import { makeKeys, type TestKeys } from '../support/events'
import { eventually } from '../support/eventually'
import { createTestDatabase, type TestDatabase } from '../support/postgres'
import { type PrivateRedis, startPrivateRedis } from '../support/redis-server'
import { startTestRelay, type TestRelay } from '../support/relay'
import { client, count, fresh, idsOf, reqEvents } from '../support/relay-client'
import { useCluster, useRelays, withGenerousRates } from '../support/relay-fixtures'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy'
import type { TestClient } from '../support/ws-client'

/**
 * Redis goes away under live cross-node traffic: a publisher on each node publishing without pause, a
 * subscriber on the other node for each. test/e2e/cluster-faults.test.ts checks the outage one request at a
 * time; this checks what continuous traffic sees. Writes fail closed (`rate-limited:`, never `error:`, never
 * OK true); reads are served; a live subscription that may miss events is CLOSED with `error:` rather than
 * left open with a gap (architecture §6.7); a client that subscribes again when told, on the same connection, ends
 * up with every event the other node acknowledged; and no OK-true event is missing from PostgreSQL.
 */

type Phase = 'before' | 'outage' | 'after'
interface Outcome {
  id: string
  phase: Phase
  accepted: boolean
  message: string
}

/** Publishes fresh events on `c` one after another, paced, recording every answer with the phase it was sent in. */
function trafficFrom(c: TestClient, keys: TestKeys, phase: () => Phase) {
  const outcomes: Outcome[] = []
  const listeners = new Set<() => void>()
  let running = true
  const done = (async () => {
    while (running) {
      const e = fresh(keys)
      const sentIn = phase()
      c.sendRaw(`["EVENT",${e.raw}]`)
      const f = await c.ok(e.event.id).catch(() => undefined)
      // an EVENT left unanswered is recorded as such (and fails the test), not thrown into the void
      outcomes.push({ id: e.event.id, phase: sentIn, accepted: f?.[2] === true, message: f ? String(f[3]) : 'no answer within 5 s' })
      for (const l of listeners) l()
      // pacing of the generator (about 40 events/s), not a wait for something to happen
      await new Promise((r) => setTimeout(r, 25))
    }
  })()
  return {
    outcomes,
    accepted: (p?: Phase) => outcomes.filter((o) => o.accepted && (p === undefined || o.phase === p)).map((o) => o.id),
    /** resolves once `holds` is true of the outcomes so far */
    until(holds: (o: Outcome[]) => boolean): Promise<void> {
      if (holds(outcomes)) return Promise.resolve()
      return new Promise((resolve) => {
        const l = () => {
          if (!holds(outcomes)) return
          listeners.delete(l)
          resolve()
        }
        listeners.add(l)
      })
    },
    async stop() {
      running = false
      await done
    },
  }
}

/**
 * A subscriber that does what NIP-01 asks of a client told CLOSED: it subscribes again (same id, same
 * connection, `since` the newest event it has), after a short pause, until it is live again.
 */
function follow(c: TestClient, subId: string, authors: string[]) {
  const seen = new Set<string>()
  const closedWith: string[] = []
  const listeners = new Set<() => void>()
  let newest = 0
  let following = true
  const subscribe = () => c.send(['REQ', subId, newest ? { authors, since: newest } : { authors }])
  c.ws.on('message', (data) => {
    const f = JSON.parse(data.toString()) as unknown[]
    if (f[1] !== subId) return
    if (f[0] === 'EVENT') {
      const e = f[2] as { id: string; created_at: number }
      seen.add(e.id)
      newest = Math.max(newest, e.created_at)
      for (const l of listeners) l()
    } else if (f[0] === 'CLOSED') {
      closedWith.push(String(f[2]))
      // the client's own retry pacing
      if (following) setTimeout(() => following && subscribe(), 200)
    }
  })
  subscribe()
  return {
    seen,
    closedWith,
    /** resolves once every id in `ids()` has been seen (live or in a page after subscribing again) */
    hasAll(ids: () => string[], timeoutMs = 20_000): Promise<void> {
      const missing = () => ids().filter((x) => !seen.has(x))
      if (missing().length === 0) return Promise.resolve()
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`${subId}: ${missing().length} events never arrived; closed with ${JSON.stringify(closedWith)}`)),
          timeoutMs,
        )
        const l = () => {
          if (missing().length > 0) return
          clearTimeout(timer)
          listeners.delete(l)
          resolve()
        }
        listeners.add(l)
      })
    },
    /** resolves once one of `ids()` has been seen */
    hasAny(ids: () => string[], timeoutMs = 20_000): Promise<void> {
      const any = () => ids().some((x) => seen.has(x))
      if (any()) return Promise.resolve()
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${subId}: none arrived; closed with ${JSON.stringify(closedWith)}`)), timeoutMs)
        const l = () => {
          if (!any()) return
          clearTimeout(timer)
          listeners.delete(l)
          resolve()
        }
        listeners.add(l)
      })
    },
    stop() {
      following = false
    },
  }
}

const readiness = async (r: TestRelay) => (await fetch(`http://127.0.0.1:${r.port}/health/ready`)).status

async function storedIds(databaseUrl: string, community: string, authors: string[]): Promise<Set<string>> {
  const store = await openPostgresEventStore({ url: databaseUrl, groupCommitMaxEvents: 10, groupCommitMaxDelayMs: 1 })
  try {
    const rows = await store.query(community, [{ authors, limit: 100_000 }], { now: Math.floor(Date.now() / 1000) })
    return new Set(rows.map((r) => r.event.id))
  } finally {
    await store.close()
  }
}

describe('live cross-node traffic across a Redis restart', () => {
  const relays = useRelays()
  const cluster = useCluster(relays)
  const cleanups: (() => Promise<void>)[] = []
  afterAll(async () => {
    for (const c of cleanups.splice(0).reverse()) await c()
  })

  // Subscriptions left open through the outage would silently miss what the other node accepted just before
  // the kill and while this node's bridge was still reconnecting.
  it('refuses writes "rate-limited:" during the outage, serves reads, closes live subscriptions that may miss events, and after it a re-subscribing client has every OK-true event, none lost from the store', async () => {
    const redis = await startPrivateRedis()
    cleanups.push(() => redis.stop())
    const {
      id,
      host,
      nodes: [a, b],
    } = await cluster.nodes(2, { redisUrl: redis.url, databaseUrl: cluster.databaseUrl() })
    const bridgeOfB = new ReplaySubject<SupervisionEvent>()
    b!.relay.supervision$.pipe(filter((e) => 'path' in e && e.path === 'bridges/bus')).subscribe(bridgeOfB)
    const keysA = makeKeys()
    const keysB = makeKeys()
    // every connection is opened while Redis answers (new ones are admitted per IP through it)
    const [pubA, pubB, subOnB, subOnA, readerB, lateOnA] = await Promise.all([
      client(a!, host),
      client(b!, host),
      client(b!, host),
      client(a!, host),
      client(b!, host),
      client(a!, host),
    ])
    const drops: string[] = []
    for (const [name, c] of Object.entries({ pubA, pubB, subOnB, subOnA, readerB, lateOnA })) void c.closed.then(() => drops.push(name))
    const aToB = follow(subOnB, 'from-a', [keysA.pubkey])
    const bToA = follow(subOnA, 'from-b', [keysB.pubkey])

    let phase: Phase = 'before'
    const fromA = trafficFrom(pubA, keysA, () => phase)
    const fromB = trafficFrom(pubB, keysB, () => phase)
    try {
      // traffic crosses both ways before the outage
      await Promise.all([aToB.hasAny(() => fromA.accepted('before')), bToA.hasAny(() => fromB.accepted('before'))])
      expect(await readiness(a!)).toBe(200)

      const ackedAtKill = fromA.accepted('before')
      await redis.kill()
      phase = 'outage'
      const refusals = (o: Outcome[]) => o.filter((x) => x.phase === 'outage' && !x.accepted).length
      await Promise.all([fromA.until((o) => refusals(o) >= 5), fromB.until((o) => refusals(o) >= 5)])
      // reads are served from PostgreSQL meanwhile, on both nodes
      const storedFromA = new Set(idsOf(await reqEvents(readerB, [{ authors: [keysA.pubkey], limit: 500 }])))
      expect(ackedAtKill.filter((x) => !storedFromA.has(x))).toEqual([])
      expect(typeof (await count(readerB, [{ authors: [keysB.pubkey] }]))).toBe('number')
      // a subscription asked for during the outage, by a client that keeps asking when told
      const late = follow(lateOnA, 'late-from-b', [keysB.pubkey])
      expect(await readiness(a!)).toBe(503)
      expect(await readiness(b!)).toBe(503)
      // the live subscriptions open at the kill were told they may miss events
      await eventually(() => aToB.closedWith.length > 0 && bToA.closedWith.length > 0, 'both live subscriptions told of the outage')

      await redis.restart()
      phase = 'after'
      await firstValueFrom(bridgeOfB.pipe(filter((e) => e.type === 'restarted')))
      await Promise.all([
        aToB.hasAny(() => fromA.accepted('after')),
        bToA.hasAny(() => fromB.accepted('after')),
        late.hasAny(() => fromB.accepted('after')),
      ])
      // traffic runs on a little once the path is back, then stops
      const [nA, nB] = [fromA.accepted('after').length, fromB.accepted('after').length]
      await Promise.all([
        fromA.until(() => fromA.accepted('after').length >= nA + 10),
        fromB.until(() => fromB.accepted('after').length >= nB + 10),
      ])
      await Promise.all([fromA.stop(), fromB.stop()])

      // each subscriber, following the protocol, has every event the other node acknowledged, in every phase
      await Promise.all([aToB.hasAll(() => fromA.accepted()), bToA.hasAll(() => fromB.accepted()), late.hasAll(() => fromB.accepted())])
      for (const s of [aToB, bToA, late]) {
        s.stop()
        for (const why of s.closedWith) expect(prefixOf(why), why).toBeDefined()
      }
      // fail closed: every write not accepted (during the outage, or while a node reconnected) was refused
      // "rate-limited:", and none was accepted while Redis was down
      const all = [...fromA.outcomes, ...fromB.outcomes]
      for (const o of all.filter((x) => !x.accepted)) expect(o.message).toBe('rate-limited: admission unavailable')
      expect(all.filter((x) => x.phase === 'outage' && x.accepted)).toEqual([])
      expect(drops).toEqual([])
      expect(
        await eventually(
          () => readiness(a!),
          (s) => s === 200,
          'node A ready again',
          { intervalMs: 100 },
        ),
      ).toBe(200)
      expect(
        await eventually(
          () => readiness(b!),
          (s) => s === 200,
          'node B ready again',
          { intervalMs: 100 },
        ),
      ).toBe(200)

      const stored = await storedIds(cluster.databaseUrl(), id, [keysA.pubkey, keysB.pubkey])
      expect([...fromA.accepted(), ...fromB.accepted()].filter((x) => !stored.has(x))).toEqual([])
    } finally {
      await Promise.all([fromA.stop(), fromB.stop()])
    }
  }, 60_000)
})

/**
 * One node loses Redis (its path is cut: a partition) while the other keeps it. The node that still reaches
 * Redis goes on accepting and publishing; the partitioned node fails its own writes closed, and its
 * subscribers can't hear what the other accepts meanwhile. The scenario runs once; each test asserts one
 * outcome of it.
 */
describe('a node partitioned from Redis while the others keep publishing', () => {
  let db: TestDatabase
  let redis: PrivateRedis
  let proxy: TcpProxy
  let a: TestRelay
  let b: TestRelay
  const community = `c-${randomBytes(5).toString('hex')}`
  const keysA = makeKeys()
  const seen = {} as {
    fromA: Outcome[]
    fromB: Outcome[]
    closedDuringPartition: string[]
    followerHasAll: boolean
    stored: Set<string>
    dropped: boolean
  }

  beforeAll(async () => {
    db = await createTestDatabase()
    redis = await startPrivateRedis()
    proxy = await startTcpProxy(redis.port)
    const host = `${community}.test`
    const shared = { databaseUrl: db.url, relaySecretKey: randomBytes(32).toString('hex'), communities: [{ id: community, hosts: [host] }] }
    a = await startTestRelay(withGenerousRates({ ...shared, redisUrl: redis.url }))
    b = await startTestRelay(withGenerousRates({ ...shared, redisUrl: `redis://127.0.0.1:${proxy.port}` }))
    const bridgeOfB = new ReplaySubject<SupervisionEvent>()
    b.relay.supervision$.pipe(filter((e) => 'path' in e && e.path === 'bridges/bus')).subscribe(bridgeOfB)
    const [pubA, pubB, subOnB] = await Promise.all([client(a, host), client(b, host), client(b, host)])
    let dropped = false
    void subOnB.closed.then(() => {
      dropped = true
    })
    const onB = follow(subOnB, 'from-a', [keysA.pubkey])

    let phase: Phase = 'before'
    const fromA = trafficFrom(pubA, keysA, () => phase)
    const fromB = trafficFrom(pubB, makeKeys(), () => phase)
    try {
      await onB.hasAny(() => fromA.accepted('before'))
      proxy.cut()
      phase = 'outage'
      await firstValueFrom(bridgeOfB.pipe(filter((e) => e.type === 'backoff')))
      const inOutage = (accepted: boolean) => (o: Outcome[]) => o.filter((x) => x.phase === 'outage' && x.accepted === accepted).length
      await Promise.all([fromA.until((o) => inOutage(true)(o) >= 10), fromB.until((o) => inOutage(false)(o) >= 3)])
      const closedDuringPartition = [...onB.closedWith]

      proxy.restore()
      phase = 'after'
      await onB.hasAny(() => fromA.accepted('after'))
      await Promise.all([fromA.stop(), fromB.stop()])
      const followerHasAll = await onB
        .hasAll(() => fromA.accepted())
        .then(
          () => true,
          () => false,
        )
      onB.stop()
      Object.assign(seen, {
        fromA: fromA.outcomes,
        fromB: fromB.outcomes,
        closedDuringPartition,
        followerHasAll,
        stored: await storedIds(db.url, community, [keysA.pubkey]),
        dropped,
      })
    } finally {
      await Promise.all([fromA.stop(), fromB.stop()])
    }
    for (const c of [pubA, pubB, subOnB]) c.close()
  }, 60_000)

  afterAll(async () => {
    await a?.close()
    await b?.close()
    await proxy?.close()
    await redis?.stop()
    await db?.drop()
  })

  it('keeps accepting writes on the node that reaches Redis and refuses them "rate-limited:" on the partitioned one, losing none it acknowledged', () => {
    expect(seen.fromA.filter((o) => !o.accepted)).toEqual([])
    const refusedOnB = seen.fromB.filter((o) => !o.accepted)
    expect(refusedOnB.length).toBeGreaterThanOrEqual(3)
    for (const o of refusedOnB) expect(o.message).toBe('rate-limited: admission unavailable')
    expect(seen.fromA.filter((o) => !seen.stored.has(o.id))).toEqual([])
  })

  // Cross-node delivery over Redis pub/sub is fire-and-forget: left open, the partitioned node's live
  // subscriptions would silently miss every event the other node accepted meanwhile.
  it('closes the partitioned node\'s live subscription with "error:" instead of leaving it open with a gap', () => {
    expect(seen.closedDuringPartition.length).toBeGreaterThan(0)
    expect(prefixOf(seen.closedDuringPartition[0]!)).toBe('error')
    expect(seen.dropped).toBe(false)
  })

  it('gives a client that subscribes again when told every event the other node acknowledged, the partition included', () => {
    expect(seen.fromA.filter((o) => o.phase === 'outage' && o.accepted).length).toBeGreaterThanOrEqual(10)
    expect(seen.followerHasAll).toBe(true)
  })
})
