import { closeSync, existsSync, mkdtempSync, openSync, readSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { openSqliteEventStore } from '../../../src/infra/store/sqlite/sqlite-event-store'
import { makeKeys, signEvent } from '../../support/events'
import { eventually } from '../../support/eventually'

const sizeOf = (f: string) => (existsSync(f) ? statSync(f).size : 0)

/** The WAL header's salt-1 (bytes 16-19): SQLite changes it each time it restarts the WAL from its first frame. */
function walSalt(file: string): number | undefined {
  if (sizeOf(`${file}-wal`) < 32) return undefined
  const fd = openSync(`${file}-wal`, 'r')
  try {
    const header = Buffer.alloc(32)
    readSync(fd, header, 0, 32, 0)
    return header.readUInt32BE(16)
  } finally {
    closeSync(fd)
  }
}

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
    await eventually(() => sizeOf(file) > before, 'the main file grown by a checkpoint', { timeoutMs: 10_000 })
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

  it.each([
    ['the writer thread', true],
    ['the main thread', false],
  ])(
    'restarts the WAL while commits on %s never pause (before, each landed during a checkpoint and the WAL grew without end)',
    async (_, writerThread) => {
      dir = mkdtempSync(join(tmpdir(), 'apiary-wal-'))
      const file = join(dir, 'events.sqlite')
      const store = openSqliteEventStore({ file, groupCommitMaxEvents: 4, groupCommitMaxDelayMs: 0, writerThread })
      const keys = makeKeys()
      const events = Array.from({ length: 200 }, (_, i) =>
        signEvent(keys, { content: `note ${i} ${'x'.repeat(3_000)}`, tags: [['t', `topic-${i % 50}`]] }),
      )
      let written = 0
      const salts = new Set<number>()
      const deadline = Date.now() + 20_000
      // two writers, each with its next save queued as its last one commits: the writer thread is never idle.
      // The same events again in another community are new rows.
      const writer = async () => {
        while (salts.size < 2 && Date.now() < deadline) {
          const n = written++
          const e = events[n % events.length]!
          await store.save(`c${Math.floor(n / events.length)}`, e.event, e.raw)
          const salt = walSalt(file)
          if (salt !== undefined) salts.add(salt)
          // as a socket's next frame would: a write's continuation that submits the next one in the same
          // microtask chain keeps a synchronous (main-thread) writer from ever yielding to the event loop
          await new Promise((resolve) => setImmediate(resolve))
        }
      }
      await Promise.all([writer(), writer()])
      expect(salts.size).toBe(2)
      await store.close()
    },
    60_000,
  )
})
