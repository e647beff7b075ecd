import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll } from 'vitest'
import { openSqliteEventStore } from '../../../src/infra/store/sqlite/sqlite-event-store'
import { describeQueryVsMatcher } from './query-vs-matcher.property'

describeQueryVsMatcher(
  'SQLite',
  async () => openSqliteEventStore({ file: ':memory:', groupCommitMaxEvents: 50, groupCommitMaxDelayMs: 0 }),
  300,
)

// the same statements on read workers' own connections: fewer runs, each read is a round trip to a thread
const dir = mkdtempSync(join(tmpdir(), 'apiary-matcher-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
describeQueryVsMatcher(
  'SQLite read workers',
  async () => openSqliteEventStore({ file: join(dir, 'events.db'), groupCommitMaxEvents: 50, groupCommitMaxDelayMs: 0, readWorkers: 2 }),
  100,
)

// tried on the main thread first within a few rows, as the relay runs them: some reads answered there, the
// rest moved to a worker partway, every answer the matcher's
describeQueryVsMatcher(
  'SQLite reads tried on the main thread first',
  async () =>
    openSqliteEventStore({
      file: join(dir, 'inline.db'),
      groupCommitMaxEvents: 50,
      groupCommitMaxDelayMs: 0,
      readWorkers: 2,
      inlineReadMaxRows: 8,
    }),
  100,
)
