import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_SETTINGS } from '../../../src/infra/store/community-store'
import { openPostgresCommunityStore } from '../../../src/infra/store/postgres/postgres-community-store'
import { openSqliteCommunityStore } from '../../../src/infra/store/sqlite/sqlite-community-store'
import { createTestDatabase, type TestDatabase } from '../../support/postgres'
import { describeCommunityStoreContract } from './community-store.contract'

const dir = mkdtempSync(join(tmpdir(), 'apiary-communities-'))
let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true })
  await db?.drop()
})

// one file for the whole suite: every open() is another process on the same data directory
describeCommunityStoreContract('SQLite', async () => openSqliteCommunityStore(join(dir, 'apiary.sqlite')))
describeCommunityStoreContract('PostgreSQL', () => openPostgresCommunityStore({ url: db.url }))

describe('community store migration', () => {
  const old = { id: 'old', name: 'from before settings', hosts: ['old.example'], agents: [], admins: [] }
  const migrated = { ...old, settings: DEFAULT_SETTINGS, kinds: { allowed: [], disallowed: [] } }

  it('opens a SQLite file from the first release: its communities get the default settings and no kind rules', async () => {
    const file = join(dir, 'first-release.sqlite')
    // the schema as the first release created it (no archived_at, admins, settings, kind rules or lists)
    const first = new Database(file)
    first.exec(`
      CREATE TABLE communities (id TEXT PRIMARY KEY, name TEXT NOT NULL, agents TEXT NOT NULL DEFAULT '[]');
      CREATE TABLE community_hosts (host TEXT PRIMARY KEY, community TEXT NOT NULL REFERENCES communities(id) ON DELETE CASCADE);
      CREATE TABLE bans (community TEXT NOT NULL, pubkey TEXT NOT NULL, reason TEXT NOT NULL, until_seconds INTEGER,
        PRIMARY KEY (community, pubkey)) WITHOUT ROWID;
      INSERT INTO communities (id, name) VALUES ('old', 'from before settings');
      INSERT INTO community_hosts (host, community) VALUES ('old.example', 'old');
    `)
    first.close()
    const store = openSqliteCommunityStore(file)
    try {
      expect(await store.list()).toEqual([migrated])
      expect(await store.updateSettings('old', { readPolicy: 'members' })).toBe(true)
      await store.setKindRule('old', 1, 'allow')
      expect(await store.list()).toEqual([
        { ...migrated, settings: { ...DEFAULT_SETTINGS, readPolicy: 'members' }, kinds: { allowed: [1], disallowed: [] } },
      ])
    } finally {
      await store.close()
    }
  })

  it('migrates a PostgreSQL database at communities schema version 3 in place', async () => {
    const v3 = await createTestDatabase()
    const sql = postgres(v3.url, { max: 1, onnotice: () => {} })
    try {
      // the schema as versions 1–3 left it
      await sql.unsafe(`
        CREATE TABLE apiary_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL);
        INSERT INTO apiary_schema VALUES ('communities', 3);
        CREATE TABLE communities (id TEXT COLLATE "C" PRIMARY KEY, name TEXT NOT NULL, agents JSONB NOT NULL DEFAULT '[]',
          archived_at BIGINT, admins JSONB NOT NULL DEFAULT '[]');
        CREATE TABLE community_hosts (host TEXT COLLATE "C" PRIMARY KEY,
          community TEXT COLLATE "C" NOT NULL REFERENCES communities (id) ON DELETE CASCADE);
        CREATE TABLE bans (community TEXT COLLATE "C" NOT NULL, pubkey TEXT COLLATE "C" NOT NULL, reason TEXT NOT NULL,
          until_seconds BIGINT, PRIMARY KEY (community, pubkey));
        INSERT INTO communities (id, name) VALUES ('old', 'from before settings');
        INSERT INTO community_hosts (host, community) VALUES ('old.example', 'old');
      `)
      const stores = await Promise.all([1, 2].map(() => openPostgresCommunityStore({ url: v3.url })))
      expect(await stores[0]!.list()).toEqual([migrated])
      expect(await stores[1]!.updateSettings('old', { authRequired: true })).toBe(true)
      expect((await stores[0]!.list())[0]?.settings).toEqual({ ...DEFAULT_SETTINGS, authRequired: true })
      await Promise.all(stores.map((s) => s.close()))
      const [row] = await sql`SELECT version FROM apiary_schema WHERE component = 'communities'`
      expect(row?.version).toBe(4)
    } finally {
      await sql.end()
      await v3.drop()
    }
  })
})
