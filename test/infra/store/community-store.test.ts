import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll } from 'vitest'
import { openPostgresCommunityStore } from '../../../src/infra/store/postgres-community-store'
import { openSqliteCommunityStore } from '../../../src/infra/store/sqlite-community-store'
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
