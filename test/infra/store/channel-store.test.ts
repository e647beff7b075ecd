import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll } from 'vitest'
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
