import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import postgres from 'postgres'
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

describe('a SQLite channels table from before the restricted flag', () => {
  it('gains restricted, banner and supported_kinds on open: its channels stay members-only for writing', async () => {
    const file = join(dir, 'before-restricted.sqlite')
    const old = new Database(file)
    old.exec(`CREATE TABLE channels (community TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL, about TEXT NOT NULL,
      picture TEXT NOT NULL, private INTEGER NOT NULL, closed INTEGER NOT NULL, deleted INTEGER NOT NULL DEFAULT 0,
      created_at INTEGER NOT NULL, hidden INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (community, id)) WITHOUT ROWID`)
    old.prepare("INSERT INTO channels VALUES ('c', 'old', 'Old', '', '', 0, 0, 0, 1, 0)").run()
    old.close()
    const store = openSqliteChannelStore(file)
    try {
      expect((await store.get('c', ['old'])).get('old')).toMatchObject({ restricted: true, banner: '', supportedKinds: null })
      expect(await store.update('c', 'old', { restricted: false })).toMatchObject({ restricted: false })
    } finally {
      await store.close()
    }
  })
})

describe('a PostgreSQL channels table from before the restricted flag', () => {
  it('gains restricted, banner and supported_kinds by migration: its channels stay members-only for writing', async () => {
    const own = await createTestDatabase()
    const sql = postgres(own.url, { max: 1, onnotice: () => {} })
    try {
      // the schema as its third migration left it
      await sql.unsafe(`CREATE TABLE apiary_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL);
        INSERT INTO apiary_schema VALUES ('channels', 3);
        CREATE TABLE channels (community TEXT COLLATE "C" NOT NULL, id TEXT COLLATE "C" NOT NULL, name TEXT NOT NULL,
          about TEXT NOT NULL, picture TEXT NOT NULL, private BOOLEAN NOT NULL, closed BOOLEAN NOT NULL,
          deleted BOOLEAN NOT NULL DEFAULT false, created_at BIGINT NOT NULL, hidden BOOLEAN NOT NULL DEFAULT false,
          PRIMARY KEY (community, id));
        CREATE TABLE channel_members (community TEXT COLLATE "C" NOT NULL, channel TEXT COLLATE "C" NOT NULL,
          pubkey TEXT COLLATE "C" NOT NULL, role TEXT NOT NULL, PRIMARY KEY (community, channel, pubkey));
        INSERT INTO channels VALUES ('c', 'old', 'Old', '', '', false, false, false, 1, false);`)
      const store = await openPostgresChannelStore({ url: own.url })
      try {
        expect((await store.get('c', ['old'])).get('old')).toMatchObject({ restricted: true, banner: '', supportedKinds: null })
        expect(await store.update('c', 'old', { restricted: false, supportedKinds: [9] })).toMatchObject({
          restricted: false,
          supportedKinds: [9],
        })
      } finally {
        await store.close()
      }
    } finally {
      await sql.end()
      await own.drop()
    }
  })
})
