import { openSqliteEventStore } from '../../../src/infra/store/sqlite-event-store'
import { describeQueryVsMatcher } from './query-vs-matcher.property'

describeQueryVsMatcher(
  'SQLite',
  async () => openSqliteEventStore({ file: ':memory:', groupCommitMaxEvents: 50, groupCommitMaxDelayMs: 0 }),
  300,
)
