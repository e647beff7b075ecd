import { randomUUID } from 'node:crypto'
import Database from 'better-sqlite3'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { EventStore } from '../../../src/infra/store/event-store'
import { openPostgresEventStore } from '../../../src/infra/store/postgres/postgres-event-store'
import { EVENT_MIGRATIONS } from '../../../src/infra/store/postgres/postgres-schema'
import { openSqliteEventStore, type SqliteEventStore } from '../../../src/infra/store/sqlite/sqlite-event-store'
import { SCHEMA_VERSION } from '../../../src/infra/store/sqlite/sqlite-schema'
import { makeKeys } from '../../support/events'
import { createTestDatabase, type TestDatabase } from '../../support/postgres'
import { NOW } from './contract-context'
import { describeJobLedgerContract, enqueue, report, request } from './job-ledger.contract'
import { sqliteFiles } from './sqlite-files'

const files = sqliteFiles('jobs')

describeJobLedgerContract('SQLite :memory:', async () =>
  openSqliteEventStore({ file: ':memory:', groupCommitMaxEvents: 64, groupCommitMaxDelayMs: 0 }),
)

// the file each store was opened on, to open it again
const fileOf = new Map<EventStore, string>()
const openFile = (file: string, writerThread: boolean) => {
  const store = files.open(file, { writerThread })
  fileOf.set(store, file)
  return store
}
for (const writerThread of [true, false]) {
  describeJobLedgerContract(
    `SQLite file, writer ${writerThread ? 'thread' : 'on the main thread'},`,
    async () => openFile(files.freshFile(), writerThread),
    {
      async reopen(store) {
        await files.close(store as SqliteEventStore)
        return openFile(fileOf.get(store)!, writerThread)
      },
    },
  )
}

let db: TestDatabase | undefined
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(() => db?.drop())
const openPostgres = () => openPostgresEventStore({ url: db!.url, groupCommitMaxEvents: 64, groupCommitMaxDelayMs: 2 })
describeJobLedgerContract('PostgreSQL', openPostgres, {
  async reopen(store) {
    await store.close()
    return openPostgres()
  },
})

describe('SQLite jobs table on the writer thread', () => {
  const agent = makeKeys()

  it('commits an assignment in the group commit of the saves sent with it, in the order sent', async () => {
    const store = files.open(files.freshFile())
    const community = `jobs-${randomUUID()}`
    const job = request()
    await store.save(community, job.event, job.raw, enqueue())
    const accepted = report(agent, job, 1, 'processing')
    const before = store.stats().transactions
    const [assigned, saved] = await Promise.all([
      store.jobs.assign(community, job.event.id, 0, agent.pubkey),
      store.save(community, accepted.e.event, accepted.e.raw, accepted.write),
    ])
    expect(store.stats()).toMatchObject({ transactions: before + 1, writerThread: true })
    // the report was decided after the assignment that made its author the assignee, in the same transaction
    expect([assigned, saved]).toEqual([
      { status: 'assigned', generation: 1, attempts: 1 },
      { status: 'saved', removedIds: [] },
    ])
    expect(await store.jobs.job(community, job.event.id)).toMatchObject({ state: 'running', generation: 1, assignee: agent.pubkey })
  })
})

describe('the jobs table in a database made before it', () => {
  it('is added to a version-3 SQLite file when it opens it, beside the events it held', async () => {
    const file = files.freshFile()
    const community = `jobs-${randomUUID()}`
    const old = request({ content: 'stored before jobs' })
    const first = files.open(file)
    await first.save(community, old.event, old.raw)
    await files.close(first)
    // what version 3 left: no jobs table, and user_version 3
    const v3 = new Database(file)
    v3.exec('DROP TABLE jobs')
    v3.pragma('user_version = 3')
    v3.close()
    const store = files.open(file)
    const job = request({ content: 'queued after the upgrade' })
    expect(await store.save(community, job.event, job.raw, enqueue())).toMatchObject({ status: 'saved' })
    expect(await store.jobs.job(community, job.event.id)).toMatchObject({ state: 'queued' })
    expect(await store.count(community, [{}], { now: NOW })).toBe(2)
    await files.close(store)
    const db = new Database(file, { readonly: true })
    expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION)
    db.close()
  })

  it('is added to a version-4 PostgreSQL database when it opens it', async () => {
    const fresh = await createTestDatabase()
    try {
      const first = await openPostgresEventStore({ url: fresh.url, groupCommitMaxEvents: 8, groupCommitMaxDelayMs: 0 })
      await first.close()
      const admin = postgres(fresh.url, { max: 1, onnotice: () => {} })
      await admin`DROP TABLE jobs`
      await admin`UPDATE apiary_schema SET version = 4 WHERE component = 'events'`
      const store = await openPostgresEventStore({ url: fresh.url, groupCommitMaxEvents: 8, groupCommitMaxDelayMs: 0 })
      const job = request()
      expect(await store.save('c', job.event, job.raw, enqueue())).toMatchObject({ status: 'saved' })
      expect(await store.jobs.job('c', job.event.id)).toMatchObject({ state: 'queued' })
      await store.close()
      const [row] = await admin`SELECT version FROM apiary_schema WHERE component = 'events'`
      await admin.end()
      expect(row?.version).toBe(EVENT_MIGRATIONS.length)
    } finally {
      await fresh.drop()
    }
  })
})
