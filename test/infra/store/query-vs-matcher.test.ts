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
