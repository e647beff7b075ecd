import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { openSqliteEventStore } from '../../../src/infra/store/sqlite-event-store'
import { makeKeys, signEvent } from '../../support/events'

const sizeOf = (f: string) => (existsSync(f) ? statSync(f).size : 0)

describe('WAL checkpoints off the event loop', () => {
  let dir = ''
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  it('folds committed pages back into the database file from the worker, and leaves an empty WAL on close', async () => {
    dir = mkdtempSync(join(tmpdir(), 'apiary-wal-'))
    const file = join(dir, 'events.sqlite')
    const store = openSqliteEventStore({ file, groupCommitMaxEvents: 100, groupCommitMaxDelayMs: 0 })
    const before = sizeOf(file)
    const keys = makeKeys()
    const events = Array.from({ length: 300 }, (_, i) => signEvent(keys, { content: `note ${i} ${'x'.repeat(500)}` }))
    await Promise.all(events.map((e) => store.save('c', e.event, e.raw)))
    // the writing connection never checkpoints now, so the main file can only grow through the worker
    const deadline = Date.now() + 10_000
    while (sizeOf(file) <= before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
    expect(sizeOf(file)).toBeGreaterThan(before)
    await store.close()
    expect(sizeOf(`${file}-wal`)).toBe(0)
    const reopened = openSqliteEventStore({ file, groupCommitMaxEvents: 100, groupCommitMaxDelayMs: 0 })
    expect(await reopened.count('c', [{}], { now: Math.floor(Date.now() / 1000) })).toBe(300)
    await reopened.close()
  })

  it('logs no failure when the store closes (stopping the worker is not the worker failing)', async () => {
    dir = mkdtempSync(join(tmpdir(), 'apiary-wal-'))
    const errors: string[] = []
    const log = { error: (_o: object, m: string) => void errors.push(m) }
    const store = openSqliteEventStore({ file: join(dir, 'events.sqlite'), groupCommitMaxEvents: 100, groupCommitMaxDelayMs: 0, log })
    const e = signEvent(makeKeys(), { content: 'one' })
    await store.save('c', e.event, e.raw)
    await store.close()
    await new Promise((r) => setImmediate(r))
    expect(errors).toEqual([])
  })
})
