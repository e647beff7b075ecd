import { randomBytes } from 'node:crypto'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openPostgresEventStore, type PostgresEventStore } from '../../src/infra/store/postgres/postgres-event-store'
import { prefixOf } from '../../src/protocols/reasons'
import { makeKeys, type SignedEvent } from '../support/events'
import { eventually } from '../support/eventually'
import { type HttpAnswer, httpGet } from '../support/http'
import { labelledMetric, metric } from '../support/metrics'
import { createTestDatabase, type TestDatabase } from '../support/postgres'
import { startTestRelay, type TestRelay } from '../support/relay'
import { client, fresh, newSubId, type Ok, publish, reqEvents } from '../support/relay-client'
import { REDIS_URL, withGenerousRates } from '../support/relay-fixtures'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy'
import type { Frame, TestClient } from '../support/ws-client'

/**
 * Reads on PostgreSQL run within limits.readBudgetMs and limits.maxRowsExamined, on connections of their own:
 * a read that passes either, because its path to the server stalls, because it is crafted to count a whole
 * table, or to examine more rows than a read may, is answered `CLOSED "error: query too expensive: ..."` and
 * counted, while the community, its writes and the node's readiness go on. Before, such a read waited out the
 * store's 10 s deadline on the pool the commits use, and its failure crashed the community actor as an outage.
 */

// well above what an indexed REQ takes on a loaded machine, far below what the crafted COUNT takes (seconds)
const BUDGET_MS = 1_000
/** what a reader past its budget must hear within: the budget, and slack for a loaded machine */
const DUE_MS = BUDGET_MS + 2_000
const BUDGET_EXCEEDED = 'apiary_store_read_budget_exceeded_total'
/** how soon reads are served again once a stalled path resumes: the pool reconnects within a second */
const RECOVERY_MS = 5_000

interface Timed<T> {
  value: T
  ms: number
}

async function timed<T>(p: Promise<T>): Promise<Timed<T>> {
  const start = performance.now()
  const value = await p
  return { value, ms: performance.now() - start }
}

/** The CLOSED, EOSE or COUNT that ends a REQ or COUNT, however long it takes (the test measures it). */
function answer(c: TestClient, verb: 'REQ' | 'COUNT', subId: string, filters: object[]): Promise<Frame> {
  c.send([verb, subId, ...filters])
  return c.next((f) => ['CLOSED', 'EOSE', 'COUNT'].includes(f[0]) && f[1] === subId, 30_000)
}

const isTooExpensive = (f: Frame) => f[0] === 'CLOSED' && prefixOf(String(f[2])) === 'error' && String(f[2]).includes('too expensive')

/** The ids a REQ is served up to its EOSE, or undefined when it is CLOSED. */
async function answerIds(c: TestClient, filters: object[]): Promise<string[] | undefined> {
  const subId = newSubId('probe')
  const end = answer(c, 'REQ', subId, filters)
  const f = await end
  if (f[0] !== 'EOSE') return undefined
  return c.frames.filter((x) => x[0] === 'EVENT' && x[1] === subId).map((x) => (x[2] as { id: string }).id)
}

const ready = (r: TestRelay): Promise<HttpAnswer> => httpGet(r, '/health/ready', {}, 5_000)

const publishTimed = (c: TestClient, e: SignedEvent): Promise<Timed<Ok>> => timed(publish(c, e))

describe('a cluster node whose read path to PostgreSQL stalls', () => {
  let db: TestDatabase
  let proxy: TcpProxy
  let store: PostgresEventStore
  let relay: TestRelay
  const community = `c-${randomBytes(5).toString('hex')}`
  const host = `${community}.test`
  const keys = makeKeys()
  const observed = {} as {
    req: Timed<Frame>
    count: Timed<Frame>
    write: Timed<Ok>
    readyStalled: HttpAnswer
    later: Frame[]
    writeAfter: Ok
    readyAfter: HttpAnswer
    exceeded: number
    afterResume: string[] | undefined
    recoveredMs: number
    written: string[]
  }

  beforeAll(async () => {
    db = await createTestDatabase()
    proxy = await startTcpProxy(Number(new URL(db.url).port))
    const viaProxy = new URL(db.url)
    viaProxy.port = String(proxy.port)
    // commits reach the server directly, reads through the proxy: only the read path stalls
    store = await openPostgresEventStore({
      url: db.url,
      readUrl: viaProxy.toString(),
      readBudgetMs: BUDGET_MS,
      groupCommitMaxEvents: 500,
      groupCommitMaxDelayMs: 10,
    })
    relay = await startTestRelay(
      withGenerousRates({ redisUrl: REDIS_URL, databaseUrl: db.url, communities: [{ id: community, hosts: [host] }] }),
      undefined,
      { eventStore: store },
    )
    const [reader, writer] = [await client(relay, host), await client(relay, host)]
    const written = [fresh(keys), fresh(keys)]
    for (const e of written) expect((await publish(writer, e)).accepted).toBe(true)
    expect(await reqEvents(reader, [{ authors: [keys.pubkey] }])).toHaveLength(2)

    proxy.stall()
    const duringStall = fresh(keys)
    written.push(duringStall)
    const [req, cnt, write] = await Promise.all([
      timed(answer(reader, 'REQ', 'stalled', [{ authors: [keys.pubkey] }])),
      timed(answer(reader, 'COUNT', 'stalled-count', [{ authors: [keys.pubkey] }])),
      publishTimed(writer, duringStall),
    ])
    const readyStalled = await ready(relay)
    // more reads than the read pool has connections, one after another: each is answered, the community stays up
    const later: Frame[] = []
    for (let i = 0; i < 6; i++) later.push(await answer(reader, 'REQ', `later-${i}`, [{ authors: [keys.pubkey] }]))
    const afterStall = fresh(keys)
    written.push(afterStall)
    const writeAfter = await publish(writer, afterStall)
    const readyAfter = await ready(relay)
    const exceeded = await metric(relay, BUDGET_EXCEEDED)

    proxy.resume()
    const resumed = performance.now()
    const afterResume = await eventually(
      () => answerIds(reader, [{ authors: [keys.pubkey] }]),
      (ids) => ids !== undefined,
      'a REQ served after the resume',
      { timeoutMs: RECOVERY_MS, intervalMs: 100 },
    )
    const recoveredMs = performance.now() - resumed
    Object.assign(observed, {
      req,
      count: cnt,
      write,
      readyStalled,
      later,
      writeAfter,
      readyAfter,
      exceeded,
      afterResume,
      recoveredMs,
      written: written.map((e) => e.event.id),
    })
    reader.close()
    writer.close()
  }, 120_000)

  afterAll(async () => {
    proxy?.resume()
    await relay?.close()
    await proxy?.close()
    await db?.drop()
  })

  it('answers a stalled REQ and COUNT with CLOSED "error: query too expensive" within the read budget', () => {
    for (const r of [observed.req, observed.count]) {
      expect(isTooExpensive(r.value)).toBe(true)
      expect(r.ms).toBeLessThan(DUE_MS)
    }
  })

  it('commits a write meanwhile (the commits have their own connections)', () => {
    expect(observed.write.value.accepted).toBe(true)
    expect(observed.write.ms).toBeLessThan(DUE_MS)
    expect(observed.writeAfter.accepted).toBe(true)
  })

  it('keeps the community and the node up: every later read is answered, /health/ready stays 200', () => {
    expect(observed.later.map((f) => isTooExpensive(f))).toEqual(Array(6).fill(true))
    expect(observed.readyStalled.status).toBe(200)
    expect(observed.readyAfter.status).toBe(200)
  })

  it('counts each read stopped at its budget in apiary_store_read_budget_exceeded_total', () => {
    expect(observed.exceeded).toBeGreaterThanOrEqual(8)
  })

  it('serves reads again within seconds of the path resuming, with the writes made during the stall', () => {
    expect([...(observed.afterResume ?? [])].sort()).toEqual([...observed.written].sort())
    expect(observed.recoveredMs).toBeLessThan(RECOVERY_MS)
  })
})

/**
 * Events inserted straight into the tables, all tagged `t=common`: a COUNT without a limit reads every one, and
 * takes several times its budget even on a warm cache, so none can finish just inside it.
 */
const BIG_TABLE_ROWS = 300_000

/**
 * Ten filters that each match every row of the table, and no limit: NIP-45 lets COUNT ask for all of it. Each
 * names kind 1, so the count is one statement (one that could match agent announcements reads those too).
 */
const CRAFTED_COUNT: object[] = [
  { kinds: [1] },
  { kinds: [1], '#t': ['common'] },
  { kinds: [1], since: 1 },
  { kinds: [1], until: 4_000_000_000 },
  { kinds: [1], since: 1, until: 4_000_000_000 },
  { kinds: [1], '#t': ['common'], since: 1 },
  { kinds: [1], '#t': ['common'], until: 4_000_000_000 },
  { kinds: [1], since: 2 },
  { kinds: [1], since: 3 },
  { kinds: [1], '#t': ['common'], since: 2 },
]
/** crafted COUNTs in flight at once: fewer than the read connections (4), so the other reader's REQ gets one */
const CRAFTED_AT_ONCE = 3

describe('a COUNT crafted to read a whole large table, on PostgreSQL', () => {
  let db: TestDatabase
  let relay: TestRelay
  const community = `c-${randomBytes(5).toString('hex')}`
  const host = `${community}.test`
  const keys = makeKeys()
  const observed = {} as {
    counts: Timed<Frame>[]
    write: Timed<Ok>
    req: Timed<string[]>
    written: string
    exceededBefore: number
    exceededAfter: number
    readyAfter: HttpAnswer
  }

  beforeAll(async () => {
    db = await createTestDatabase()
    relay = await startTestRelay(
      withGenerousRates({
        redisUrl: REDIS_URL,
        databaseUrl: db.url,
        communities: [{ id: community, hosts: [host] }],
        // rows far past the table's: the time budget is what stops these COUNTs
        limits: { readBudgetMs: BUDGET_MS, maxRowsExamined: 100 * BIG_TABLE_ROWS },
      }),
    )
    // the relay created the schema; rows go in by SQL, far faster than as signed events
    const sql = postgres(db.url, { max: 1, onnotice: () => {} })
    try {
      await sql.unsafe(
        `INSERT INTO events (community, id, pubkey, kind, created_at, raw)
         SELECT $1, md5(i::text) || md5((-i)::text), md5((i % 1000)::text) || md5((i % 1000)::text), 1, 1700000000 + i, '{}'
         FROM generate_series(1, ${BIG_TABLE_ROWS}) AS i`,
        [community],
      )
      await sql.unsafe(
        `INSERT INTO tags (event_seq, name, value, community, kind, created_at)
         SELECT seq, 't', 'common', community, kind, created_at FROM events WHERE community = $1`,
        [community],
      )
      await sql.unsafe('ANALYZE events; ANALYZE tags')
    } finally {
      await sql.end()
    }

    const [attackers, other, writer] = [await client(relay, host), await client(relay, host), await client(relay, host)]
    const mine = fresh(keys)
    expect((await publish(writer, mine)).accepted).toBe(true)
    const exceededBefore = await metric(relay, BUDGET_EXCEEDED)
    const counts = Array.from({ length: CRAFTED_AT_ONCE }, (_, i) => timed(answer(attackers, 'COUNT', `crafted-${i}`, CRAFTED_COUNT)))
    // while they run: another reader's REQ and a writer's EVENT
    const [req, write] = await Promise.all([
      timed(reqEvents(other, [{ authors: [keys.pubkey], kinds: [1], limit: 10 }]).then((es) => es.map((e) => e.id))),
      publishTimed(writer, fresh(keys)),
    ])
    Object.assign(observed, {
      counts: await Promise.all(counts),
      write,
      req,
      written: mine.event.id,
      exceededBefore,
      exceededAfter: await metric(relay, BUDGET_EXCEEDED),
      readyAfter: await ready(relay),
    })
    for (const c of [attackers, other, writer]) c.close()
  }, 180_000)

  afterAll(async () => {
    await relay?.close()
    await db?.drop()
  })

  it('answers each crafted COUNT with CLOSED "error: query too expensive" within the read budget', () => {
    expect(
      observed.counts.map((c) => isTooExpensive(c.value)),
      JSON.stringify(observed.counts),
    ).toEqual(Array(CRAFTED_AT_ONCE).fill(true))
    for (const c of observed.counts) expect(c.ms).toBeLessThan(DUE_MS)
  })

  it('counts every one of them in apiary_store_read_budget_exceeded_total', () => {
    expect(observed.exceededAfter - observed.exceededBefore).toBeGreaterThanOrEqual(CRAFTED_AT_ONCE)
  })

  it("serves another reader's REQ and commits a write meanwhile, each within the read budget", () => {
    expect(observed.req.value).toContain(observed.written)
    expect(observed.req.ms).toBeLessThan(DUE_MS)
    expect(observed.write.value.accepted).toBe(true)
    expect(observed.write.ms).toBeLessThan(DUE_MS)
    expect(observed.readyAfter.status).toBe(200)
  })
})

/** The row budget of the next tests: far below the tables, and a read at it still takes well under its time. */
const MAX_ROWS = 10_000
/** Events tagged `t=common`, and as many tagged `p` with one of P_VALUES: no event carries both. */
const HALF_ROWS = 30_000
const FIRST_CREATED_AT = 1_700_000_000
const P_VALUES = Array.from({ length: 17 }, (_, i) => `${i}`.padStart(2, '0').repeat(32))

describe('reads crafted to examine more rows than limits.maxRowsExamined, on PostgreSQL', () => {
  let db: TestDatabase
  let relay: TestRelay
  let c: TestClient
  const community = `c-${randomBytes(5).toString('hex')}`
  const host = `${community}.test`
  const refused = (reason: 'rows' | 'time') => labelledMetric(relay, 'apiary_reads_refused_total', { reason })
  /** the `t=common` events created in [first, last]: the 2i-th event is the i-th of them (created_at + 2i) */
  const commonBetween = (first: number, n: number) => ({
    since: FIRST_CREATED_AT + 2 * first,
    until: FIRST_CREATED_AT + 2 * (first + n - 1),
  })

  beforeAll(async () => {
    db = await createTestDatabase()
    relay = await startTestRelay(
      withGenerousRates({
        redisUrl: REDIS_URL,
        databaseUrl: db.url,
        communities: [{ id: community, hosts: [host] }],
        // time far past what any of these reads takes: the rows are what stop them
        limits: { maxRowsExamined: MAX_ROWS, readBudgetMs: 30_000 },
        store: { queryTimeoutMs: 60_000 },
      }),
    )
    const sql = postgres(db.url, { max: 1, onnotice: () => {} })
    try {
      await sql.unsafe(
        `INSERT INTO events (community, id, pubkey, kind, created_at, raw)
         SELECT $1, md5(i::text) || md5((-i)::text), md5((i % 1000)::text) || md5((i % 1000)::text), 1, $2::bigint + i, '{}'
         FROM generate_series(1, ${2 * HALF_ROWS}) AS i`,
        [community, FIRST_CREATED_AT],
      )
      // even seqs (even created_at offsets) tagged t=common, odd ones p=one of P_VALUES
      await sql.unsafe(
        `INSERT INTO tags (event_seq, name, value, community, kind, created_at)
         SELECT seq, CASE WHEN seq % 2 = 0 THEN 't' ELSE 'p' END,
           CASE WHEN seq % 2 = 0 THEN 'common' ELSE ($2::text[])[1 + seq % 17] END, community, kind, created_at
         FROM events WHERE community = $1`,
        [community, P_VALUES],
      )
      await sql.unsafe('ANALYZE events; ANALYZE tags')
      // the seqs start at 1 in a fresh database: event i has seq i and created_at FIRST_CREATED_AT + i
      const [row] = await sql.unsafe(`SELECT min(created_at) AS first FROM tags WHERE community = $1 AND name = 't'`, [community])
      expect(Number(row!.first)).toBe(FIRST_CREATED_AT + 2)
    } finally {
      await sql.end()
    }
    c = await client(relay, host)
  }, 120_000)

  afterAll(async () => {
    c?.close()
    await relay?.close()
    await db?.drop()
  })

  it('answers a REQ whose tags never meet (#t common, #p 17 values) with CLOSED "error: query too expensive", counted as rows', async () => {
    const before = await refused('rows')
    const f = await answer(c, 'REQ', 'crafted', [{ '#t': ['common'], '#p': P_VALUES }])
    expect(isTooExpensive(f), JSON.stringify(f)).toBe(true)
    expect(await refused('rows')).toBe(before + 1)
    expect(await refused('time')).toBe(0)
  })

  it('answers a COUNT without a limit over every t=common event with CLOSED "error: query too expensive", counted as rows', async () => {
    const before = await refused('rows')
    const f = await answer(c, 'COUNT', 'every', [{ '#t': ['common'] }])
    expect(isTooExpensive(f), JSON.stringify(f)).toBe(true)
    expect(await refused('rows')).toBe(before + 1)
    expect(await refused('time')).toBe(0)
  })

  it('counts a COUNT that examines exactly limits.maxRowsExamined rows, and refuses one that examines one more', async () => {
    expect(await answer(c, 'COUNT', 'at', [{ '#t': ['common'], ...commonBetween(1, MAX_ROWS) }])).toEqual([
      'COUNT',
      'at',
      { count: MAX_ROWS },
    ])
    const over = await answer(c, 'COUNT', 'over', [{ '#t': ['common'], ...commonBetween(1, MAX_ROWS + 1) }])
    expect(isTooExpensive(over), JSON.stringify(over)).toBe(true)
  })

  it('serves the crafted REQ narrowed to fewer candidate rows than the budget: EOSE, nothing matches', async () => {
    const narrowed = { '#t': ['common'], '#p': P_VALUES, ...commonBetween(HALF_ROWS - MAX_ROWS / 2, MAX_ROWS / 2) }
    expect(await answerIds(c, [narrowed])).toEqual([])
  })
})
