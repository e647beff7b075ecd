import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type EventStore, StoreError } from '../../../src/infra/store/event-store'
import { openPostgresEventStore, type PostgresEventStore } from '../../../src/infra/store/postgres/postgres-event-store'
import { EVENT_MIGRATIONS } from '../../../src/infra/store/postgres/postgres-schema'
import { makeKeys, signEvent } from '../../support/events'
import { createTestDatabase, type TestDatabase } from '../../support/postgres'
import { idsOf, NOW, removeByEveryPath } from './contract-context'
import { describeEventStoreContract } from './event-store.contract'

let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(() => db?.drop())

// the contract's reads of 40,000-value filters (more than a client frame can carry) check answers, not the
// read budget: on a loaded machine they take longer than the relay's default 2 s. Rows are counted, as the relay
// always has them counted (limits.maxRowsExamined), so the statements checked are the ones it sends.
const open = (groupCommitMaxEvents = 64) =>
  openPostgresEventStore({ url: db.url, groupCommitMaxEvents, groupCommitMaxDelayMs: 2, readBudgetMs: 60_000, maxRowsExamined: 10_000_000 })

/** A real failure: a trigger installed through another connection aborts any insert carrying the marker. */
async function openWithWriteFault(marker: string): Promise<EventStore> {
  // DDL takes no bound parameters: the marker becomes part of the trigger's name and argument
  if (!/^[A-Za-z-]+$/.test(marker)) throw new Error(`unsafe marker ${marker}`)
  const store = await open()
  const admin = postgres(db.url, { max: 1, onnotice: () => {} })
  try {
    await admin.unsafe(`CREATE OR REPLACE FUNCTION fail_marked() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF strpos(NEW.raw, TG_ARGV[0]) > 0 THEN RAISE EXCEPTION 'injected write failure'; END IF;
        RETURN NEW;
      END $$`)
    const trigger = `fail_${marker.toLowerCase().replaceAll('-', '_')}`
    await admin.unsafe(`CREATE OR REPLACE TRIGGER ${trigger} BEFORE INSERT ON events
      FOR EACH ROW EXECUTE FUNCTION fail_marked('${marker}')`)
  } finally {
    await admin.end()
  }
  return store
}

const transactionsOf = (s: EventStore) => (s as PostgresEventStore).stats().transactions

describeEventStoreContract('PostgreSQL', () => open(), { transactionsOf, openWithWriteFault })

describe('PostgreSQL event store', () => {
  const alice = makeKeys()

  it('drops the tag and version rows of the events deleteEvents removes, and only theirs', async () => {
    const store = await open()
    const community = `removal-${Date.now()}`
    const [gone, kept] = ['gone', 'kept'].map((t) =>
      signEvent(alice, {
        kind: 30_000,
        tags: [
          ['d', t],
          ['t', t],
        ],
      }),
    )
    for (const e of [gone!, kept!]) await store.save(community, e.event, e.raw)
    await store.deleteEvents(community, [gone!.event.id])
    await store.close()
    const sql = postgres(db.url, { max: 1, onnotice: () => {} })
    const tags = await sql`SELECT value FROM tags WHERE community = ${community} AND name = 't'`
    const versions = await sql`SELECT d FROM versions WHERE community = ${community}`
    await sql.end()
    expect(tags.map((r) => r.value)).toEqual(['kept'])
    expect(versions.map((r) => r.d)).toEqual(['kept'])
  })

  it('drops the tags-by-kind index of a version-1 database when it opens it, and still serves its tags', async () => {
    const fresh = await createTestDatabase()
    try {
      const e = signEvent(alice, { kind: 7, tags: [['t', 'kept']] })
      const first = await openPostgresEventStore({ url: fresh.url, groupCommitMaxEvents: 8, groupCommitMaxDelayMs: 0 })
      await first.save('c', e.event, e.raw)
      await first.close()
      // what version 1 left: the index, and version 1
      const sql = postgres(fresh.url, { max: 1, onnotice: () => {} })
      await sql`CREATE INDEX tags_by_value_kind ON tags (community, name, value, kind, created_at DESC)`
      await sql`UPDATE apiary_schema SET version = 1 WHERE component = 'events'`
      const store = await openPostgresEventStore({ url: fresh.url, groupCommitMaxEvents: 8, groupCommitMaxDelayMs: 0 })
      expect(idsOf(await store.query('c', [{ kinds: [7], tags: { t: ['kept'] }, limit: 5 }], { now: NOW }))).toEqual([e.event.id])
      await store.close()
      expect(await sql`SELECT indexname FROM pg_indexes WHERE indexname = 'tags_by_value_kind'`).toHaveLength(0)
      const [row] = await sql`SELECT version FROM apiary_schema WHERE component = 'events'`
      await sql.end()
      expect(row?.version).toBe(EVENT_MIGRATIONS.length)
    } finally {
      await fresh.drop()
    }
  })

  it('drops the tags foreign key of a version-2 database when it opens it, and still serves and deletes its tags', async () => {
    const fresh = await createTestDatabase()
    try {
      const kept = signEvent(alice, { kind: 1, tags: [['t', 'kept']] })
      const old = signEvent(alice, { kind: 0, created_at: NOW - 10, tags: [['t', 'old']] })
      const first = await openPostgresEventStore({ url: fresh.url, groupCommitMaxEvents: 8, groupCommitMaxDelayMs: 0 })
      for (const e of [kept, old]) await first.save('c', e.event, e.raw)
      await first.close()
      // what version 2 left: the foreign key with its cascade, and version 2
      const sql = postgres(fresh.url, { max: 1, onnotice: () => {} })
      await sql`ALTER TABLE tags ADD CONSTRAINT tags_event_seq_fkey FOREIGN KEY (event_seq) REFERENCES events (seq) ON DELETE CASCADE`
      await sql`UPDATE apiary_schema SET version = 2 WHERE component = 'events'`
      const store = await openPostgresEventStore({ url: fresh.url, groupCommitMaxEvents: 8, groupCommitMaxDelayMs: 0 })
      const newer = signEvent(alice, { kind: 0, created_at: NOW - 5, tags: [['t', 'new']] })
      await store.save('c', newer.event, newer.raw)
      expect(idsOf(await store.query('c', [{ tags: { t: ['kept', 'old', 'new'] } }], { now: NOW })).sort()).toEqual(
        [kept.event.id, newer.event.id].sort(),
      )
      await store.close()
      expect(await sql`SELECT conname FROM pg_constraint WHERE conrelid = 'tags'::regclass AND contype = 'f'`).toHaveLength(0)
      expect((await sql`SELECT value FROM tags WHERE name = 't' ORDER BY value`).map((r) => r.value)).toEqual(['kept', 'new'])
      const [row] = await sql`SELECT version FROM apiary_schema WHERE component = 'events'`
      await sql.end()
      expect(row?.version).toBe(EVENT_MIGRATIONS.length)
    } finally {
      await fresh.drop()
    }
  })

  it('adds the rows budget function to a version-3 database when it opens it, and counts its reads with it', async () => {
    const fresh = await createTestDatabase()
    try {
      const events = Array.from({ length: 5 }, (_, i) => signEvent(alice, { kind: 1, created_at: NOW - i, tags: [['t', 'x']] }))
      const first = await openPostgresEventStore({ url: fresh.url, groupCommitMaxEvents: 8, groupCommitMaxDelayMs: 0 })
      for (const e of events) await first.save('c', e.event, e.raw)
      await first.close()
      // what version 3 left: no function, and version 3
      const sql = postgres(fresh.url, { max: 1, onnotice: () => {} })
      await sql`DROP FUNCTION apiary_within_budget(BIGINT, BIGINT)`
      await sql`UPDATE apiary_schema SET version = 3 WHERE component = 'events'`
      const store = await openPostgresEventStore({ url: fresh.url, groupCommitMaxEvents: 8, groupCommitMaxDelayMs: 0, maxRowsExamined: 5 })
      try {
        // at the bound: the five tag rows; with a sixth the count is refused, with the rows it examined
        expect(await store.count('c', [{ tags: { t: ['x'] } }], { now: NOW })).toBe(5)
        const sixth = signEvent(alice, { kind: 1, created_at: NOW - 5, tags: [['t', 'x']] })
        await store.save('c', sixth.event, sixth.raw)
        const over = await store.count('c', [{ tags: { t: ['x'] } }], { now: NOW }).catch((e: unknown) => e)
        expect(over).toBeInstanceOf(StoreError)
        expect((over as StoreError).over).toEqual({ reason: 'rows', rows: 6 })
        expect(store.stats().readBudgetExceeded).toBe(1)
      } finally {
        await store.close()
      }
      const [row] = await sql`SELECT version FROM apiary_schema WHERE component = 'events'`
      await sql.end()
      expect(row?.version).toBe(EVENT_MIGRATIONS.length)
    } finally {
      await fresh.drop()
    }
  })

  it('leaves no tag row without its event after replacements, NIP-09 deletions by id and address, and deleteEvents', async () => {
    const fresh = await createTestDatabase()
    try {
      const store = await openPostgresEventStore({ url: fresh.url, groupCommitMaxEvents: 8, groupCommitMaxDelayMs: 0 })
      const expected = await removeByEveryPath(store, alice)
      await store.close()
      const sql = postgres(fresh.url, { max: 1, onnotice: () => {} })
      const [orphans] = await sql`SELECT count(*)::int AS n FROM tags t WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.seq = t.event_seq)`
      const perEvent = await sql`SELECT e.id, count(t.name)::int AS n FROM events e LEFT JOIN tags t ON t.event_seq = e.seq GROUP BY e.id`
      await sql.end()
      expect(orphans?.n).toBe(0)
      expect(new Map(perEvent.map((r) => [r.id as string, r.n as number]))).toEqual(expected)
    } finally {
      await fresh.drop()
    }
  })

  it('migrates once when several nodes open the same database at the same moment', async () => {
    const fresh = await createTestDatabase()
    try {
      const opens = Array.from({ length: 4 }, () =>
        openPostgresEventStore({ url: fresh.url, groupCommitMaxEvents: 8, groupCommitMaxDelayMs: 0 }),
      )
      const stores = await Promise.all(opens)
      for (const s of stores) expect(await s.ping()).toBe(true)
      await Promise.all(stores.map((s) => s.close()))
      const sql = postgres(fresh.url, { max: 1, onnotice: () => {} })
      const [row] = await sql`SELECT version FROM apiary_schema WHERE component = 'events'`
      await sql.end()
      expect(row?.version).toBe(EVENT_MIGRATIONS.length)
    } finally {
      await fresh.drop()
    }
  })

  it('stores and finds tag values PostgreSQL text cannot index as they are (NUL, very long, lone surrogate)', async () => {
    const store = await open()
    const odd = ['a\u0000b', 'x'.repeat(5000), 'lone \ud800 surrogate', '\u0001starts with the digest mark']
    const events = odd.map((v, i) =>
      signEvent(alice, {
        kind: 30_000,
        created_at: NOW - i,
        tags: [
          ['d', v],
          ['t', v],
        ],
      }),
    )
    const outcomes = await Promise.all(events.map((e) => store.save('odd', e.event, e.raw)))
    expect(outcomes.map((o) => o.status)).toEqual(['saved', 'saved', 'saved', 'saved'])
    for (const [i, v] of odd.entries()) {
      const got = await store.query('odd', [{ tags: { t: [v] } }, { tags: { d: [v] }, limit: 5 }], { now: NOW })
      expect(idsOf(got)).toEqual([events[i]!.event.id])
    }
    await store.close()
  })

  it('commits one transaction per event when groupCommitMaxEvents is 1', async () => {
    const store = await open(1)
    const events = Array.from({ length: 5 }, (_, i) => signEvent(alice, { content: `one by one ${i}` }))
    await Promise.all(events.map((e) => store.save('single', e.event, e.raw)))
    expect(store.stats()).toEqual({ transactions: 5, events: 5, readBudgetExceeded: 0 })
    await store.close()
  })

  it('logs a failed write transaction with its cause', async () => {
    const logged: object[] = []
    const store = await openPostgresEventStore({
      url: db.url,
      groupCommitMaxEvents: 8,
      groupCommitMaxDelayMs: 0,
      log: { error: (obj) => logged.push(obj) },
    })
    const e = signEvent(alice, { content: 'LOG-THIS-FAILURE' })
    const faulty = await openWithWriteFault('LOG-THIS-FAILURE')
    await faulty.close()
    await expect(store.save('log', e.event, e.raw)).rejects.toMatchObject({ code: 'APIARY_STORE_UNAVAILABLE' })
    expect(logged).toEqual([expect.objectContaining({ batchSize: 1, err: expect.any(Error) })])
    await store.close()
  })

  it('refuses to open with StoreError when the server is unreachable', async () => {
    const store = await openPostgresEventStore({
      url: db.url.replace(':5432/', ':1/'),
      groupCommitMaxEvents: 8,
      groupCommitMaxDelayMs: 0,
    }).catch((err: unknown) => err)
    expect(store).toMatchObject({ code: 'APIARY_STORE_UNAVAILABLE' })
  })
})
