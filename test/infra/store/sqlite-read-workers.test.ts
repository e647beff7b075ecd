import Database from 'better-sqlite3'
import { beforeAll, describe, expect, it } from 'vitest'
import { type EventStore, StoreError } from '../../../src/infra/store/event-store'
import type { SqliteEventStore } from '../../../src/infra/store/sqlite/sqlite-event-store'
import type { Filter } from '../../../src/protocols/nip01/filter'
import { makeKeys, signEvent } from '../../support/events'
import { eventually } from '../../support/eventually'
import { idsOf, NOW } from './contract-context'
import { sqliteFiles } from './sqlite-files'

const { freshFile, open } = sqliteFiles('read-workers')
const ready = (store: SqliteEventStore, workers: number) =>
  eventually(() => store.stats().readWorkersReady === workers, `${workers} read workers ready`)

/**
 * A community big enough that counting it takes a reader a long while (~0.4 s here, four times the budget the
 * budget tests set): rows written through a second connection, unsigned, since only counts read them.
 */
const HEAVY = 'heavy'
const HEAVY_ROWS = 200_000
function fillHeavy(file: string): void {
  const admin = new Database(file)
  admin
    .prepare(`WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n LIMIT ?)
      INSERT INTO events (community, id, pubkey, kind, created_at, raw)
      SELECT ?, printf('%064x', x), printf('%064x', x % 1000), 1, ? - x, '{}' FROM n`)
    .run(HEAVY_ROWS, HEAVY, NOW)
  admin.close()
}
// every row of the community, five times over (five unlimited filters, one union)
const heavyFilters: Filter[] = [{}, { kinds: [1] }, { since: 0 }, { until: NOW }, { since: 0, until: NOW }]
const heavyCount = (store: EventStore) => store.count(HEAVY, heavyFilters, { now: NOW })

describe('SQLite reads on worker threads', () => {
  const alice = makeKeys()
  const bob = makeKeys()
  let file = ''
  let someIds: string[] = []
  beforeAll(async () => {
    file = freshFile()
    const writer = open(file)
    const events = [
      ...Array.from({ length: 30 }, (_, i) =>
        signEvent(alice, {
          created_at: NOW - i,
          tags: [
            ['t', i % 2 ? 'odd' : 'even'],
            ['p', bob.pubkey],
          ],
        }),
      ),
      ...Array.from({ length: 10 }, (_, i) => signEvent(bob, { kind: 7, created_at: NOW - i, tags: [['t', 'odd']] })),
      signEvent(bob, { kind: 4, created_at: NOW - 50, tags: [['p', alice.pubkey]] }),
    ]
    await Promise.all(events.map((e) => writer.save('c', e.event, e.raw)))
    someIds = events.slice(0, 3).map((e) => e.event.id)
    fillHeavy(file)
  })

  it('answers every query and count exactly as the main thread does', async () => {
    const onWorkers = open(file, { readWorkers: 2 })
    const here = open(file, { readWorkers: 0 })
    await ready(onWorkers, 2)
    const filters: Filter[][] = [
      [{}],
      [{ authors: [alice.pubkey], limit: 5 }],
      [{ kinds: [1, 7], limit: 12 }],
      [{ tags: { t: ['odd', 'even'] }, limit: 7 }, { authors: [bob.pubkey] }],
      [{ tags: { p: [bob.pubkey] }, kinds: [1], since: NOW - 10, until: NOW - 2 }],
      [{ ids: [] }],
    ]
    const reader = { now: NOW, authorOnly: { kinds: [4], readers: [alice.pubkey] } }
    for (const f of filters) {
      for (const o of [{ now: NOW }, reader]) {
        expect(idsOf(await onWorkers.query('c', f, o))).toEqual(idsOf(await here.query('c', f, o)))
        expect(await onWorkers.count('c', f, o)).toBe(await here.count('c', f, o))
      }
    }
    // still both up: no read failed over to the main thread or cost a worker
    expect(onWorkers.stats()).toMatchObject({ readWorkersReady: 2, readBudgetExceeded: 0 })
  })

  it('answers a read within store.inlineReadMaxRows on the main thread, and moves one past it to a worker with the same answer', async () => {
    const inline = open(file, { readWorkers: 2, inlineReadMaxRows: 2 })
    const workersOnly = open(file, { readWorkers: 2 })
    await Promise.all([ready(inline, 2), ready(workersOnly, 2)])
    // an id is one candidate row
    const atLimit: Filter[] = [{ ids: someIds.slice(0, 2) }]
    const pastLimit: Filter[] = [{ ids: someIds.slice(0, 3) }]
    expect(idsOf(await inline.query('c', atLimit, { now: NOW }))).toEqual(idsOf(await workersOnly.query('c', atLimit, { now: NOW })))
    expect(inline.stats()).toMatchObject({ readsInline: 1, readsMovedToWorker: 0 })
    const past = await inline.query('c', pastLimit, { now: NOW })
    expect(past).toHaveLength(3)
    expect(idsOf(past)).toEqual(idsOf(await workersOnly.query('c', pastLimit, { now: NOW })))
    expect(inline.stats()).toMatchObject({ readsInline: 1, readsMovedToWorker: 1, readBudgetExceeded: 0 })
    // 0 (the store's default): every read goes to a worker
    expect(workersOnly.stats()).toMatchObject({ readsInline: 0, readsMovedToWorker: 0 })
  })

  it('moves a heavy count to a worker within a few milliseconds of the event loop, and keeps the loop turning', async () => {
    const store = open(file, { readWorkers: 2, inlineReadMaxRows: HEAVY_ROWS * 10 })
    await ready(store, 2)
    let ticks = 0
    const ticker = setInterval(() => ticks++, 1)
    try {
      expect(await heavyCount(store)).toBe(HEAVY_ROWS)
    } finally {
      clearInterval(ticker)
    }
    // the inline try stopped at its time cap (2 ms a turn), not at the rows, and the worker counted it all
    expect(store.stats()).toMatchObject({ readsInline: 0, readsMovedToWorker: 1, readBudgetExceeded: 0 })
    expect(ticks).toBeGreaterThan(0)
  })

  it('gives the reads tried on the main thread 2 ms a turn together: once one spends it, the next read of that turn goes to a worker', async () => {
    const store = open(file, { readWorkers: 2, inlineReadMaxRows: HEAVY_ROWS * 10 })
    await ready(store, 2)
    // both asked in one turn: the heavy count spends the turn's allowance and moves; the light read is not tried
    const heavy = heavyCount(store)
    const light = store.count('c', [{ kinds: [7] }], { now: NOW })
    expect(await Promise.all([heavy, light])).toEqual([HEAVY_ROWS, 10])
    expect(store.stats()).toMatchObject({ readsInline: 0, readsMovedToWorker: 1 })
    // a later turn has its allowance again
    expect(await store.count('c', [{ kinds: [7] }], { now: NOW })).toBe(10)
    expect(store.stats()).toMatchObject({ readsInline: 1, readsMovedToWorker: 1 })
  })

  it('keeps the event loop turning while a worker runs a heavy count, and serves a light read beside it', async () => {
    const store = open(file, { readWorkers: 2 })
    await ready(store, 2)
    const seen: string[] = []
    const ticker = setInterval(() => seen.push('tick'), 1)
    try {
      const heavy = heavyCount(store).then((n) => void seen.push(`heavy ${n}`))
      const light = store.count('c', [{ kinds: [7] }], { now: NOW }).then((n) => void seen.push(`light ${n}`))
      await Promise.all([heavy, light])
    } finally {
      clearInterval(ticker)
    }
    const events = seen.filter((s) => s !== 'tick')
    expect(events).toEqual(['light 10', `heavy ${HEAVY_ROWS}`])
    expect(seen.slice(0, seen.indexOf(`heavy ${HEAVY_ROWS}`))).toContain('tick')
  })

  it('holds the event loop for the whole count on the main thread (readWorkers 0), as the contrast', async () => {
    const store = open(file, { readWorkers: 0 })
    const seen: string[] = []
    const ticker = setInterval(() => seen.push('tick'), 1)
    try {
      await heavyCount(store).then((n) => void seen.push(`heavy ${n}`))
    } finally {
      clearInterval(ticker)
    }
    expect(seen).toEqual([`heavy ${HEAVY_ROWS}`])
  })

  it('fails a read past its budget with StoreError, replaces its worker and answers the next read', async () => {
    const errors: string[] = []
    const store = open(file, { readWorkers: 1, queryTimeoutMs: 100, log: { error: (_o, m) => void errors.push(m) } })
    await ready(store, 1)
    const over = heavyCount(store)
    await expect(over).rejects.toBeInstanceOf(StoreError)
    await expect(over).rejects.toThrow(/exceeded its budget of 100 ms/)
    expect(store.stats().readBudgetExceeded).toBe(1)
    expect(errors).toEqual(['event store: read passed its budget; its worker was stopped and replaced'])
    await ready(store, 1)
    expect(await store.count('c', [{ kinds: [7] }], { now: NOW })).toBe(10)
  })

  it('stops a read past its budget on the main thread too, and answers the next read', async () => {
    const store = open(file, { readWorkers: 0, queryTimeoutMs: 100 })
    await expect(heavyCount(store)).rejects.toThrow(/exceeded its budget of 100 ms/)
    expect(store.stats().readBudgetExceeded).toBe(1)
    expect(await store.count('c', [{ kinds: [7] }], { now: NOW })).toBe(10)
  })

  it.each([1, 0])(
    'stops a COUNT without limit past its rows budget on %i workers, the reader freeing itself, and answers the next read',
    async (readWorkers) => {
      const store = open(file, { readWorkers, readBudget: { maxRows: 10_000, ms: 60_000 } })
      if (readWorkers) await ready(store, 1)
      const over = await store.count(HEAVY, [{ kinds: [1] }], { now: NOW }).catch((e: unknown) => e)
      expect(over).toBeInstanceOf(StoreError)
      expect((over as StoreError).over).toEqual({ reason: 'rows', rows: 10_001 })
      expect(store.stats().readBudgetExceeded).toBe(1)
      // the worker stopped the read itself: nothing was terminated or replaced
      if (readWorkers) expect(store.stats().readWorkersReady).toBe(1)
      expect(await store.count('c', [{ kinds: [7] }], { now: NOW })).toBe(10)
      // at the budget: a read that examines no more rows than it allows is answered
      expect(await store.count(HEAVY, [{ kinds: [1], limit: 5_000 }], { now: NOW })).toBe(5_000)
    },
  )

  it('stops a read past its time budget on a worker, which frees itself before the backstop', async () => {
    const store = open(file, { readWorkers: 1, queryTimeoutMs: 60_000, readBudget: { maxRows: Number.MAX_SAFE_INTEGER, ms: 50 } })
    await ready(store, 1)
    const over = await heavyCount(store).catch((e: unknown) => e)
    expect((over as StoreError).over?.reason).toBe('time')
    expect(store.stats().readWorkersReady).toBe(1)
    expect(await store.count('c', [{ kinds: [7] }], { now: NOW })).toBe(10)
  })

  it('refuses reads that spent their time budget waiting for a busy worker at that budget, not at queryTimeoutMs', async () => {
    const budgetMs = 100
    const queryTimeoutMs = 1_000
    const store = open(file, { readWorkers: 1, queryTimeoutMs, readBudget: { maxRows: Number.MAX_SAFE_INTEGER, ms: budgetMs } })
    await ready(store, 1)
    // one runs past its budget; the rest wait behind it, more of them than queryTimeoutMs holds budgets
    const reads = 20
    const started = performance.now()
    const outcomes = await Promise.all(Array.from({ length: reads }, () => heavyCount(store).catch((e: unknown) => e as StoreError)))
    const ms = performance.now() - started
    console.log(`${reads} heavy reads behind one worker, ${budgetMs} ms budget: all answered after ${ms.toFixed(0)} ms`)
    // each read's clock ran from when it was asked for: every one is over its time, none waited for a fresh budget
    expect(outcomes.map((e) => (e as StoreError).over?.reason)).toEqual(Array(reads).fill('time'))
    expect(ms).toBeLessThan(queryTimeoutMs)
    expect(store.stats()).toMatchObject({ readBudgetExceeded: reads, readWorkersReady: 1, readsWaiting: 0 })
    expect(await store.count('c', [{ kinds: [7] }], { now: NOW })).toBe(10)
  })

  it('replaces a worker that dies, failing only the read it held, with StoreError', async () => {
    const errors: string[] = []
    const store = open(file, { readWorkers: 1, log: { error: (_o, m) => void errors.push(m) } })
    await ready(store, 1)
    store.crashReadWorkerOnNextReadForTest()
    const lost = store.query('c', [{ kinds: [7] }], { now: NOW })
    await expect(lost).rejects.toBeInstanceOf(StoreError)
    await expect(lost).rejects.toThrow(/read worker died/)
    expect(errors).toEqual(['event store: read worker died; replacing it'])
    // the one worker is gone: this read waits for its replacement, then is answered by it
    expect(await store.count('c', [{ kinds: [7] }], { now: NOW })).toBe(10)
    expect(store.stats().readWorkersReady).toBe(1)
  })

  it("queues up to 1,000 reads of one community behind busy workers, refuses that community's next one at once, still queues another's, and answers them all", async () => {
    const store = open(file, { readWorkers: 1 })
    await ready(store, 1)
    const count = (community = 'c') => store.count(community, [{ kinds: [7] }], { now: NOW })
    // one runs; its answer can only arrive on a later turn of the loop, so the rest all wait
    const accepted = Array.from({ length: 1 + 1_000 }, () => count())
    expect(store.stats().readsWaiting).toBe(1_000)
    const refused = count()
    expect(store.stats().readsWaiting).toBe(1_000)
    await expect(refused).rejects.toBeInstanceOf(StoreError)
    await expect(refused).rejects.toThrow(/too many reads waiting/)
    // the bound is the community's: a storm in every community of a node is no reason to refuse one of them
    const elsewhere = count('d')
    expect(store.stats().readsWaiting).toBe(1_001)
    expect(new Set(await Promise.all(accepted))).toEqual(new Set([10]))
    expect(await elsewhere).toBe(0)
    expect(store.stats().readsWaiting).toBe(0)
  })

  it('answers the reads accepted before close(), then refuses new ones with StoreError', async () => {
    const store = open(file, { readWorkers: 1 })
    await ready(store, 1)
    const accepted = [store.count('c', [{ kinds: [7] }], { now: NOW }), store.count('c', [{ kinds: [1] }], { now: NOW })]
    const closed = store.close()
    await expect(store.count('c', [{}], { now: NOW })).rejects.toBeInstanceOf(StoreError)
    expect(await Promise.all(accepted)).toEqual([10, 30])
    await closed
    expect(store.stats().readWorkersReady).toBe(0)
  })

  it('reads an in-memory database on the main thread whatever readWorkers says', async () => {
    const store = open(':memory:', { readWorkers: 2 })
    const e = signEvent(alice)
    await store.save('c', e.event, e.raw)
    expect(idsOf(await store.query('c', [{}], { now: NOW }))).toEqual([e.event.id])
    expect(store.stats().readWorkersReady).toBe(0)
  })
})
