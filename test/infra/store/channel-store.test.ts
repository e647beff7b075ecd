import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openPostgresChannelStore } from '../../../src/infra/store/postgres/postgres-channel-store'
import { openSqliteChannelStore } from '../../../src/infra/store/sqlite/sqlite-channel-store'
import { channelRow } from '../../support/channel-rows'
import { createTestDatabase, type TestDatabase } from '../../support/postgres'
import { describeChannelInvitesContract } from './channel-invites.contract'
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
describeChannelInvitesContract('SQLite', async () => openSqliteChannelStore(join(dir, 'apiary.sqlite')))
describeChannelInvitesContract('PostgreSQL', () => openPostgresChannelStore({ url: db.url }))

const init = channelRow('x', { name: 'n', restricted: true, closed: true })
const invite = { code: 'k', maxUses: 3, createdBy: 'a'.repeat(64), createdAt: 1 }

describe('a deleted channel’s invite codes', () => {
  it('leave no row behind on SQLite', async () => {
    const file = join(dir, 'dropped-codes.sqlite')
    const store = openSqliteChannelStore(file)
    try {
      await store.create('c', init, 'a'.repeat(64))
      expect(await store.createInvite('c', 'x', invite, 1)).toBe('created')
      expect(await store.remove('c', 'x')).toBe(true)
    } finally {
      await store.close()
    }
    const raw = new Database(file)
    expect(raw.prepare("SELECT count(*) AS n FROM channel_invites WHERE community = 'c'").get()).toEqual({ n: 0 })
    raw.close()
  })

  it('leave no row behind on PostgreSQL', async () => {
    const store = await openPostgresChannelStore({ url: db.url })
    const sql = postgres(db.url, { max: 1, onnotice: () => {} })
    try {
      await store.create('dropped-codes', init, 'a'.repeat(64))
      expect(await store.createInvite('dropped-codes', 'x', invite, 1)).toBe('created')
      expect(await store.remove('dropped-codes', 'x')).toBe(true)
      const [row] = await sql`SELECT count(*)::int AS n FROM channel_invites WHERE community = 'dropped-codes'`
      expect(row?.n).toBe(0)
    } finally {
      await store.close()
      await sql.end()
    }
  })
})

describe('a channel_members table from before roles (admin or member)', () => {
  it('keeps its admins as role admin and its members as plain members on SQLite, and takes roles after', async () => {
    const file = join(dir, 'before-roles.sqlite')
    const old = new Database(file)
    old.exec(`CREATE TABLE channels (community TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL, about TEXT NOT NULL,
      picture TEXT NOT NULL, private INTEGER NOT NULL, closed INTEGER NOT NULL, deleted INTEGER NOT NULL DEFAULT 0,
      created_at INTEGER NOT NULL, hidden INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (community, id)) WITHOUT ROWID;
    CREATE TABLE channel_members (community TEXT NOT NULL, channel TEXT NOT NULL, pubkey TEXT NOT NULL,
      role TEXT NOT NULL CHECK (role IN ('admin', 'member')), PRIMARY KEY (community, channel, pubkey)) WITHOUT ROWID;
    CREATE INDEX channel_members_by_pubkey ON channel_members (community, pubkey);`)
    old.prepare("INSERT INTO channels VALUES ('c', 'old', 'Old', '', '', 0, 0, 0, 1, 0)").run()
    old
      .prepare(`INSERT INTO channel_members VALUES ('c', 'old', '${'a'.repeat(64)}', 'admin'), ('c', 'old', '${'b'.repeat(64)}', 'member')`)
      .run()
    old.close()
    for (let open = 0; open < 2; open++) {
      // a second open finds the file converted and leaves it so
      const store = openSqliteChannelStore(file)
      try {
        expect(await store.members('c', 'old')).toEqual([
          { pubkey: 'a'.repeat(64), roles: ['admin'] },
          { pubkey: 'b'.repeat(64), roles: [] },
        ])
      } finally {
        await store.close()
      }
    }
    const store = openSqliteChannelStore(file)
    try {
      expect(await store.putMember('c', 'old', 'b'.repeat(64), ['moderator'])).toBe('updated')
      expect(await store.memberChannels('c', ['b'.repeat(64)])).toEqual(new Set(['old']))
    } finally {
      await store.close()
    }
  })

  it('migrates a PostgreSQL database at channels schema version 3 in place', async () => {
    const v3 = await createTestDatabase()
    const sql = postgres(v3.url, { max: 1, onnotice: () => {} })
    try {
      // the schema as versions 1–3 left it
      await sql.unsafe(`
        CREATE TABLE apiary_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL);
        INSERT INTO apiary_schema VALUES ('channels', 3);
        CREATE TABLE channels (community TEXT COLLATE "C" NOT NULL, id TEXT COLLATE "C" NOT NULL, name TEXT NOT NULL,
          about TEXT NOT NULL, picture TEXT NOT NULL, private BOOLEAN NOT NULL, closed BOOLEAN NOT NULL,
          deleted BOOLEAN NOT NULL DEFAULT false, created_at BIGINT NOT NULL, hidden BOOLEAN NOT NULL DEFAULT false,
          PRIMARY KEY (community, id));
        CREATE TABLE channel_members (community TEXT COLLATE "C" NOT NULL, channel TEXT COLLATE "C" NOT NULL,
          pubkey TEXT COLLATE "C" NOT NULL, role TEXT NOT NULL CHECK (role IN ('admin', 'member')),
          PRIMARY KEY (community, channel, pubkey));
        CREATE INDEX channel_members_by_pubkey ON channel_members (community, pubkey);
        INSERT INTO channels VALUES ('c', 'old', 'Old', '', '', false, true, false, 1, false);
        INSERT INTO channel_members VALUES ('c', 'old', '${'a'.repeat(64)}', 'admin'), ('c', 'old', '${'b'.repeat(64)}', 'member');
      `)
      const stores = await Promise.all([1, 2].map(() => openPostgresChannelStore({ url: v3.url })))
      expect(await stores[0]!.members('c', 'old')).toEqual([
        { pubkey: 'a'.repeat(64), roles: ['admin'] },
        { pubkey: 'b'.repeat(64), roles: [] },
      ])
      expect(await stores[1]!.putMember('c', 'old', 'b'.repeat(64), ['moderator', 'gardener'])).toBe('updated')
      expect(await stores[0]!.createInvite('c', 'old', invite, 1)).toBe('created')
      expect(await stores[1]!.redeemInvite('c', 'old', 'k', 'c'.repeat(64), 1)).toBe('joined')
      await Promise.all(stores.map((s) => s.close()))
      const [row] = await sql`SELECT version FROM apiary_schema WHERE component = 'channels'`
      expect(row?.version).toBe(6)
    } finally {
      await sql.end()
      await v3.drop()
    }
  })
})

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
