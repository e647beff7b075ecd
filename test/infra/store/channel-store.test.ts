import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openPostgresChannelStore } from '../../../src/infra/store/postgres/postgres-channel-store'
import { openSqliteChannelStore } from '../../../src/infra/store/sqlite/sqlite-channel-store'
import { createTestDatabase, type TestDatabase } from '../../support/postgres'
import { describeChannelStoreContract } from './channel-store.contract'

const dir = mkdtempSync(join(tmpdir(), 'apiary-channels-'))
let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true })
  await db?.drop()
})

// one file for the whole suite: every open() is another process on the same data directory
describeChannelStoreContract('SQLite', async () => openSqliteChannelStore(join(dir, 'apiary.sqlite')))
describeChannelStoreContract('PostgreSQL', () => openPostgresChannelStore({ url: db.url }))

describe('a SQLite channels table from before the hidden flag', () => {
  it('gains the column on open: its channels read as not hidden, and can be hidden', async () => {
    const file = join(dir, 'before-hidden.sqlite')
    const old = new Database(file)
    old.exec(`CREATE TABLE channels (community TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL, about TEXT NOT NULL,
      picture TEXT NOT NULL, private INTEGER NOT NULL, closed INTEGER NOT NULL, deleted INTEGER NOT NULL DEFAULT 0,
      created_at INTEGER NOT NULL, PRIMARY KEY (community, id)) WITHOUT ROWID`)
    old.prepare("INSERT INTO channels VALUES ('c', 'old', 'Old', '', '', 1, 0, 0, 1)").run()
    old.close()
    const store = openSqliteChannelStore(file)
    try {
      expect((await store.get('c', ['old'])).get('old')).toMatchObject({ private: true, hidden: false })
      expect(await store.update('c', 'old', { hidden: true })).toMatchObject({ private: true, hidden: true })
    } finally {
      await store.close()
    }
  })
})
