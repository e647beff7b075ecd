import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import type { EventStore } from '../../../src/infra/store/event-store'
import { openSqliteEventStore, type SqliteEventStore } from '../../../src/infra/store/sqlite/sqlite-event-store'
import { SCHEMA_VERSION } from '../../../src/infra/store/sqlite/sqlite-schema'
import { makeKeys, signEvent } from '../../support/events'
import { idsOf, NOW, removeByEveryPath } from './contract-context'
import { describeEventStoreContract } from './event-store.contract'

const dir = mkdtempSync(join(tmpdir(), 'apiary-sqlite-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0
const freshFile = () => join(dir, `events-${++files}.db`)

const openFile = async (file = freshFile(), readWorkers = 0, writerThread = true) =>
  openSqliteEventStore({ file, groupCommitMaxEvents: 64, groupCommitMaxDelayMs: 2, readWorkers, writerThread })

/** A real failure: a second connection installs a trigger that aborts any insert carrying the marker. */
const openWithWriteFault =
  (readWorkers: number, writerThread = true) =>
  async (marker: string): Promise<EventStore> => {
    const file = freshFile()
    const store = await openFile(file, readWorkers, writerThread)
    // DDL takes no bound parameters; the marker is spliced in, so it must be a plain word
    if (!/^[A-Za-z-]+$/.test(marker)) throw new Error(`unsafe marker ${marker}`)
    const admin = new Database(file)
    admin.exec(`CREATE TRIGGER fail_marked BEFORE INSERT ON events WHEN instr(NEW.raw, '${marker}') > 0
    BEGIN SELECT RAISE(ABORT, 'injected write failure'); END`)
    admin.close()
    return store
  }

const transactionsOf = (s: EventStore) => (s as SqliteEventStore).stats().transactions

describeEventStoreContract(
  'SQLite :memory:',
  async () => openSqliteEventStore({ file: ':memory:', groupCommitMaxEvents: 64, groupCommitMaxDelayMs: 0 }),
  { transactionsOf },
)

// the same contract on the main thread's connection and on read workers' own connections
for (const readWorkers of [0, 2]) {
  describeEventStoreContract(`SQLite file, ${readWorkers} read workers,`, () => openFile(freshFile(), readWorkers), {
    transactionsOf,
    openWithWriteFault: openWithWriteFault(readWorkers),
  })
}
// and with the writer on the main thread's connection (store.writerThread false)
describeEventStoreContract('SQLite file, writer on the main thread,', () => openFile(freshFile(), 2, false), {
  transactionsOf,
  openWithWriteFault: openWithWriteFault(2, false),
})

describe('SQLite event store file', () => {
  const alice = makeKeys()

  it('drops the tag rows of the events deleteEvents removes, and only theirs', async () => {
    const file = freshFile()
    const store = await openFile(file)
    const [gone, kept] = ['gone', 'kept'].map((t) =>
      signEvent(alice, {
        tags: [
          ['t', t],
          ['p', alice.pubkey],
        ],
      }),
    )
    for (const e of [gone!, kept!]) await store.save('c', e.event, e.raw)
    await store.deleteEvents('c', [gone!.event.id])
    const admin = new Database(file, { readonly: true })
    const tags = admin.prepare("SELECT value FROM tags WHERE community = 'c' AND name = 't'").pluck().all()
    admin.close()
    await store.close()
    expect(tags).toEqual(['kept'])
  })

  it('leaves no tag row without its event after replacements, NIP-09 deletions by id and address, and deleteEvents', async () => {
    const file = freshFile()
    const store = await openFile(file)
    const expected = await removeByEveryPath(store, alice)
    await store.close()
    const db = new Database(file, { readonly: true })
    const orphans = db.prepare('SELECT count(*) FROM tags WHERE event_seq NOT IN (SELECT seq FROM events)').pluck().get()
    const perEvent = db
      .prepare('SELECT e.id, count(t.name) AS n FROM events e LEFT JOIN tags t ON t.event_seq = e.seq GROUP BY e.seq')
      .all() as { id: string; n: number }[]
    db.close()
    expect(orphans).toBe(0)
    expect(new Map(perEvent.map((r) => [r.id, r.n]))).toEqual(expected)
  })

  it("does not match a deleted event's tags against the next event that takes its seq", async () => {
    const store = await openFile()
    const first = signEvent(alice, { kind: 1, created_at: NOW - 10, tags: [['t', 'gone']] })
    await store.save('c', first.event, first.raw)
    // the newest row is gone, so SQLite hands its seq to the next insert
    await store.deleteEvents('c', [first.event.id])
    const next = signEvent(alice, { kind: 1, created_at: NOW - 5, tags: [] })
    await store.save('c', next.event, next.raw)
    expect(idsOf(await store.query('c', [{ tags: { t: ['gone'] } }], { now: NOW }))).toEqual([])
    expect(idsOf(await store.query('c', [{ kinds: [1] }], { now: NOW }))).toEqual([next.event.id])
    await store.close()
  })

  it("answers tag conditions over more than 16 values (read from the events' own tags) as it does over a few", async () => {
    const store = await openFile()
    const channels = Array.from({ length: 20 }, (_, i) => `channel-${i}`)
    const people = Array.from({ length: 20 }, (_, i) => `${i}`.padStart(64, 'a'))
    const events = Array.from({ length: 40 }, (_, i) =>
      signEvent(alice, {
        kind: 1,
        created_at: NOW - i,
        tags: [['t', 'topic'], ['p', people[i % 20]!], ...(i % 3 === 0 ? [['h', channels[i % 20]!]] : [])],
      }),
    )
    for (const e of events) await store.save('c', e.event, e.raw)
    const ask = (values: string[], hidden: string[]) =>
      store.query('c', [{ tags: { t: ['topic'], p: values } }], { now: NOW, hiddenChannels: hidden }).then(idsOf)
    const visible = (values: string[], hidden: string[]) =>
      events
        .filter((e) => values.includes(e.event.tags[1]![1]!) && !e.event.tags.some(([n, v]) => n === 'h' && hidden.includes(v!)))
        .map((e) => e.event.id)
    // many values (the raw path) and few (the seeks) give the reference answer
    expect((await ask(people, channels)).sort()).toEqual(visible(people, channels).sort())
    expect((await ask(people.slice(0, 3), channels.slice(0, 2))).sort()).toEqual(visible(people.slice(0, 3), channels.slice(0, 2)).sort())
    expect((await ask(people, channels)).length).toBeGreaterThan(20)
    await store.close()
  })

  it('keeps saves that close() committed: reopening the file serves them', async () => {
    const file = freshFile()
    const store = await openFile(file)
    const events = Array.from({ length: 10 }, (_, i) => signEvent(alice, { created_at: NOW - i }))
    const pending = events.map((e) => store.save('c', e.event, e.raw))
    await store.close()
    await Promise.all(pending)
    const reopened = await openFile(file)
    expect(await reopened.count('c', [{}], { now: NOW })).toBe(10)
    await reopened.close()
  })

  it('runs in WAL mode with synchronous=NORMAL at the current schema version, however often opened', async () => {
    const file = freshFile()
    for (let i = 0; i < 2; i++) await (await openFile(file)).close()
    const db = new Database(file, { readonly: true })
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal')
    expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION)
    db.close()
    const store = openSqliteEventStore({ file, groupCommitMaxEvents: 1, groupCommitMaxDelayMs: 0 })
    expect(await store.ping()).toBe(true)
    await store.close()
  })

  it('drops the tags-by-kind index of a version-1 file when it opens it, and still serves its tags', async () => {
    const file = freshFile()
    const e = signEvent(alice, { kind: 7, tags: [['t', 'kept']] })
    const first = await openFile(file)
    await first.save('c', e.event, e.raw)
    await first.close()
    // what version 1 left: the index, and user_version 1
    const v1 = new Database(file)
    v1.exec('CREATE INDEX tags_by_value_kind ON tags (community, name, value, kind, created_at)')
    v1.pragma('user_version = 1')
    v1.close()
    const store = await openFile(file)
    expect(idsOf(await store.query('c', [{ kinds: [7], tags: { t: ['kept'] }, limit: 5 }], { now: NOW }))).toEqual([e.event.id])
    await store.close()
    const db = new Database(file, { readonly: true })
    expect(db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'tags_by_value_kind'").all()).toEqual([])
    expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION)
    db.close()
  })

  it('rebuilds the tags table of a version-2 file without its foreign key and cascade index, keeping every row', async () => {
    const file = freshFile()
    const kept = signEvent(alice, {
      kind: 1,
      tags: [
        ['t', 'kept'],
        ['p', alice.pubkey],
      ],
    })
    const version1 = signEvent(alice, { kind: 0, created_at: NOW - 10, tags: [['t', 'old']] })
    const first = await openFile(file)
    for (const e of [kept, version1]) await first.save('c', e.event, e.raw)
    await first.close()
    // what version 2 left: the table with its foreign key, the index the cascade used, and user_version 2
    const v2 = new Database(file)
    v2.exec(`
      CREATE TABLE tags_v2 (
        community TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL, kind INTEGER NOT NULL, created_at INTEGER NOT NULL,
        event_seq INTEGER NOT NULL REFERENCES events (seq) ON DELETE CASCADE,
        PRIMARY KEY (community, name, value, created_at, event_seq)
      ) WITHOUT ROWID;
      INSERT INTO tags_v2 SELECT * FROM tags;
      DROP TABLE tags;
      ALTER TABLE tags_v2 RENAME TO tags;
      CREATE INDEX tags_by_event ON tags (event_seq);
    `)
    v2.pragma('user_version = 2')
    v2.close()
    const store = await openFile(file)
    const version2 = signEvent(alice, { kind: 0, created_at: NOW - 5, tags: [['t', 'new']] })
    await store.save('c', version2.event, version2.raw)
    expect(idsOf(await store.query('c', [{ tags: { t: ['kept'] } }], { now: NOW }))).toEqual([kept.event.id])
    expect(idsOf(await store.query('c', [{ tags: { p: [alice.pubkey] } }], { now: NOW }))).toEqual([kept.event.id])
    expect(idsOf(await store.query('c', [{ tags: { t: ['old', 'new'] } }], { now: NOW }))).toEqual([version2.event.id])
    await store.close()
    const db = new Database(file, { readonly: true })
    expect(db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'tags'").all()).toEqual([])
    expect(db.prepare("SELECT * FROM pragma_foreign_key_list('tags')").all()).toEqual([])
    expect(db.prepare("SELECT value FROM tags WHERE name = 't' ORDER BY value").pluck().all()).toEqual(['kept', 'new'])
    expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION)
    db.close()
  })

  it('commits one transaction per event when groupCommitMaxEvents is 1', async () => {
    const store = openSqliteEventStore({ file: ':memory:', groupCommitMaxEvents: 1, groupCommitMaxDelayMs: 50 })
    const events = Array.from({ length: 5 }, (_, i) => signEvent(alice, { content: `${i}` }))
    await Promise.all(events.map((e) => store.save('c', e.event, e.raw)))
    expect(store.stats()).toMatchObject({ transactions: 5, events: 5 })
    await store.close()
  })

  it('logs a failed write transaction with its cause', async () => {
    const file = freshFile()
    const logged: object[] = []
    const store = openSqliteEventStore({
      file,
      groupCommitMaxEvents: 8,
      groupCommitMaxDelayMs: 0,
      log: { error: (obj) => logged.push(obj) },
    })
    // a first write that commits: the writer thread is up and has prepared its statements
    const first = signEvent(alice, { content: 'first' })
    await expect(store.save('c', first.event, first.raw)).resolves.toMatchObject({ status: 'saved' })
    const admin = new Database(file)
    admin.exec('DROP TABLE deleted_ids')
    admin.close()
    const e = signEvent(alice, { kind: 5, tags: [['e', 'f'.repeat(64)]] })
    await expect(store.save('c', e.event, e.raw)).rejects.toMatchObject({ code: 'APIARY_STORE_UNAVAILABLE' })
    expect(logged).toEqual([expect.objectContaining({ batchSize: 1, err: expect.any(Error) })])
    await store.close()
  })
})
