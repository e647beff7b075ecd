import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach } from 'vitest'
import {
  openSqliteEventStore,
  type SqliteEventStore,
  type SqliteEventStoreOptions,
} from '../../../src/infra/store/sqlite/sqlite-event-store'

/**
 * SQLite event stores on files of a test file's own temporary folder (removed after the file), each closed
 * after its test. Call once at the top of a test file: it registers the hooks.
 */
export function sqliteFiles(prefix: string) {
  const dir = mkdtempSync(join(tmpdir(), `apiary-${prefix}-`))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  let files = 0
  const opened: SqliteEventStore[] = []
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((s) => s.close()))
  })
  return {
    freshFile: () => join(dir, `events-${++files}.db`),
    open(file: string, o: Partial<SqliteEventStoreOptions> = {}): SqliteEventStore {
      const store = openSqliteEventStore({ file, groupCommitMaxEvents: 64, groupCommitMaxDelayMs: 0, ...o })
      opened.push(store)
      return store
    },
    /** closes a store before its test ends (it is not closed again after it) */
    async close(store: SqliteEventStore): Promise<void> {
      opened.splice(opened.indexOf(store), 1)
      await store.close()
    },
  }
}
