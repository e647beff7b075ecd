import { afterAll, beforeAll } from 'vitest'
import { openPostgresEventStore } from '../../../src/infra/store/postgres/postgres-event-store'
import { createTestDatabase, type TestDatabase } from '../../support/postgres'
import { describeQueryVsMatcher } from './query-vs-matcher.property'

let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(() => db?.drop())

// each case is a few round trips to a real server, so fewer cases than SQLite's 300 (1000 pass, in ~8 s)
describeQueryVsMatcher(
  'PostgreSQL',
  () => openPostgresEventStore({ url: db.url, groupCommitMaxEvents: 50, groupCommitMaxDelayMs: 0, maxRowsExamined: 10_000_000 }),
  100,
)
