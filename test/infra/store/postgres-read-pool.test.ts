import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openReadPool } from '../../../src/infra/store/postgres/postgres-read-pool'
import { ReadBudgetExceeded } from '../../../src/infra/store/read-budget.mjs'
import { eventually } from '../../support/eventually'
import { createTestDatabase, type TestDatabase } from '../../support/postgres'
import { startTcpProxy } from '../../support/tcp-proxy'

/**
 * The event store's read connections (postgres-read-pool.ts) against the real server: a statement past the
 * budget is stopped by PostgreSQL itself, not only abandoned by the caller, and the connection serves the next
 * read; the connections are shared fairly across communities. The stalled path is
 * test/faults/postgres-read-budget.test.ts.
 */

const BUDGET_MS = 300
const BUDGET = { ms: BUDGET_MS, maxRows: Number.POSITIVE_INFINITY }

let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(() => db?.drop())

/** statements of this test's database the server is running now, other than the asker's */
async function running(marker: string): Promise<number> {
  const admin = postgres(db.url, { max: 1, onnotice: () => {} })
  try {
    const [row] = await admin.unsafe(
      `SELECT count(*)::int AS n FROM pg_stat_activity
       WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid() AND query LIKE $1`,
      [`%${marker}%`],
    )
    return row!.n as number
  } finally {
    await admin.end()
  }
}

describe('the PostgreSQL read pool', () => {
  it('rejects a read past its budget with ReadBudgetExceeded (time), and the server stops the statement (statement_timeout)', async () => {
    const pool = openReadPool(db.url, 2, BUDGET)
    try {
      const started = performance.now()
      const slow = pool.values('c', [{ sql: "SELECT pg_sleep(5), 'slow-marker'", params: [] }])
      await expect(slow).rejects.toMatchObject({ name: 'ReadBudgetExceeded', reason: 'time' })
      await expect(slow).rejects.toBeInstanceOf(ReadBudgetExceeded)
      expect(performance.now() - started).toBeLessThan(BUDGET_MS + 1_000)
      // without statement_timeout the sleep would run on for 5 s after the caller gave up
      await eventually(
        () => running('slow-marker'),
        (n) => n === 0,
        'the abandoned statement stopped on the server',
        {
          timeoutMs: 2_000,
          intervalMs: 50,
        },
      )
      expect(await pool.values<[number]>('c', [{ sql: 'SELECT 1 + $1::int', params: [1] }])).toEqual([[[2]]])
    } finally {
      await pool.end()
    }
  })

  it('answers statements within the budget, each with its rows as arrays', async () => {
    const pool = openReadPool(db.url, 2, BUDGET)
    try {
      const pages = await pool.values<[number]>('c', [
        { sql: 'SELECT generate_series(1, $1::int)', params: [3] },
        { sql: 'SELECT $1::int', params: [7] },
        { sql: 'SELECT $1::int', params: [8] },
      ])
      expect(pages).toEqual([[[1], [2], [3]], [[7]], [[8]]])
    } finally {
      await pool.end()
    }
  })

  it("serves another community's statement at the next free connection while one community's statements fill them all", async () => {
    const pool = openReadPool(db.url, 2, { ms: 10_000, maxRows: Number.POSITIVE_INFINITY })
    try {
      // both connections open, so what is measured is the queue
      await Promise.all([0, 1].map(() => pool.values('a', [{ sql: 'SELECT 1', params: [] }])))
      const a = Array.from({ length: 10 }, () => pool.values('a', [{ sql: 'SELECT pg_sleep(0.3)', params: [] }]))
      const started = performance.now()
      expect(await pool.values<[number]>('b', [{ sql: 'SELECT 1', params: [] }])).toEqual([[[1]]])
      const waitedMs = performance.now() - started
      await Promise.all(a)
      console.log(`postgres read fairness: b waited ${waitedMs.toFixed(0)} ms behind 10 statements of 300 ms on 2 connections`)
      // at the next free connection: one statement of a (300 ms) and a margin; behind a's queue it is 1.5 s
      expect(waitedMs).toBeLessThan(900)
    } finally {
      await pool.end()
    }
  })
})

describe('the PostgreSQL read pool on a stalled path', () => {
  it('drops a connection that sent a statement and heard nothing past the budget, so the next read gets a new one', async () => {
    const proxy = await startTcpProxy(Number(new URL(db.url).port))
    const viaProxy = new URL(db.url)
    viaProxy.port = String(proxy.port)
    const pool = openReadPool(viaProxy.toString(), 1, BUDGET)
    try {
      expect(await pool.values<[number]>('c', [{ sql: 'SELECT 1', params: [] }])).toEqual([[[1]]])
      const opened = proxy.accepted
      proxy.stall()
      await expect(pool.values('c', [{ sql: 'SELECT 2', params: [] }])).rejects.toMatchObject({
        name: 'ReadBudgetExceeded',
        reason: 'time',
      })
      // once the silent connection is dropped (budget + 1 s), a read is sent on a new one; kept, it would
      // hold the pool's only slot for as long as the path stalls
      await eventually(
        async () => {
          await pool.values('c', [{ sql: 'SELECT 3', params: [] }]).catch(() => {})
          return proxy.accepted
        },
        (n) => n > opened,
        'a new connection opened for a read',
        { timeoutMs: 5_000, intervalMs: 100 },
      )
    } finally {
      proxy.resume()
      await pool.end()
      await proxy.close()
    }
  })
})
