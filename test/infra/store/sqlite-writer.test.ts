import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { StoreError } from '../../../src/infra/store/event-store'
import { makeKeys, signEvent } from '../../support/events'
import { eventually } from '../../support/eventually'
import { idsOf, NOW } from './contract-context'
import { sqliteFiles } from './sqlite-files'

const { freshFile, open, close } = sqliteFiles('writer')

describe('SQLite writer thread', () => {
  const alice = makeKeys()
  const note = (content: string) => signEvent(alice, { content, tags: [['t', 'x']] })

  it('commits batches off the main thread: saved events are readable at once, by this store and another connection', async () => {
    const file = freshFile()
    const store = open(file)
    const events = Array.from({ length: 50 }, (_, i) => note(`n${i}`))
    const outcomes = await Promise.all(events.map((e) => store.save('c', e.event, e.raw)))
    expect(outcomes.every((o) => o.status === 'saved')).toBe(true)
    expect(store.stats()).toMatchObject({ writerThread: true, events: 50 })
    expect(idsOf(await store.query('c', [{ tags: { t: ['x'] } }], { now: NOW })).sort()).toEqual(events.map((e) => e.event.id).sort())
    const other = new Database(file, { readonly: true })
    expect(other.prepare('SELECT count(*) FROM tags WHERE community = ?').pluck().get('c')).toBe(50)
    other.close()
    expect(await store.deleteEvents('c', [events[0]!.event.id, 'f'.repeat(64)])).toEqual([events[0]!.event.id])
  })

  it('fails only the batch a dying writer held, with StoreError, and replaces the thread', async () => {
    const errors: string[] = []
    const store = open(freshFile(), { log: { error: (_o, m) => void errors.push(m) } })
    const before = note('before')
    await store.save('c', before.event, before.raw)
    store.crashWriterOnNextCommitForTest()
    const lost = note('lost')
    const failed = store.save('c', lost.event, lost.raw)
    await expect(failed).rejects.toBeInstanceOf(StoreError)
    const err = (await failed.catch((e: unknown) => e)) as StoreError
    expect((err.cause as Error).message).toMatch(/the writer thread stopped, so its outcome is unknown/)
    expect(errors).toContain('event store: the writer thread died; replacing it')
    // the replacement commits; the lost event was never committed, so sending it again saves it
    const after = note('after')
    expect(await store.save('c', after.event, after.raw)).toMatchObject({ status: 'saved' })
    expect(await store.save('c', lost.event, lost.raw)).toMatchObject({ status: 'saved' })
    expect(store.stats()).toMatchObject({ writerThread: true, writerRespawns: 1 })
    expect(idsOf(await store.query('c', [{}], { now: NOW })).sort()).toEqual([before, lost, after].map((e) => e.event.id).sort())
  })

  it('writes on the main thread once writer threads keep failing to start', async () => {
    const file = freshFile()
    await close(open(file, { writerThread: false }))
    // a table the writer prepares a statement for is gone: every writer thread dies while starting
    const admin = new Database(file)
    const schema = admin.prepare("SELECT sql FROM sqlite_master WHERE name = 'deleted_addresses'").pluck().get() as string
    admin.exec('DROP TABLE deleted_addresses')
    const errors: string[] = []
    const store = open(file, { log: { error: (_o, m) => void errors.push(m) } })
    await eventually(() => !store.stats().writerThread, 'writes back on the main thread')
    expect(errors.at(-1)).toBe('event store: the writer thread keeps failing to start; writing on the main thread')
    admin.exec(schema)
    admin.close()
    const e = note('on main')
    expect(await store.save('c', e.event, e.raw)).toMatchObject({ status: 'saved' })
    expect(idsOf(await store.query('c', [{}], { now: NOW }))).toEqual([e.event.id])
  })

  it('waits for another connection holding the write lock instead of failing with SQLITE_BUSY', async () => {
    const file = freshFile()
    const store = open(file)
    const first = note('first')
    await store.save('c', first.event, first.raw)
    // a second connection (as the community and channel stores are) takes the write lock for a while
    const other = new Database(file)
    other.exec('BEGIN IMMEDIATE')
    other.prepare("INSERT INTO deleted_ids VALUES ('c', ?, ?, 0)").run('e'.repeat(64), alice.pubkey)
    const e = note('behind the lock')
    const saved = store.save('c', e.event, e.raw)
    let settled = false
    void saved.finally(() => (settled = true))
    await new Promise((r) => setTimeout(r, 100))
    expect(settled).toBe(false)
    other.exec('COMMIT')
    other.close()
    expect(await saved).toMatchObject({ status: 'saved' })
  })

  it('commits every accepted save before close() resolves', async () => {
    const file = freshFile()
    const store = open(file)
    const events = Array.from({ length: 300 }, (_, i) => note(`c${i}`))
    const saves = events.map((e) => store.save('c', e.event, e.raw))
    await close(store)
    expect((await Promise.all(saves)).every((o) => o.status === 'saved')).toBe(true)
    const reopened = open(file)
    expect(await reopened.count('c', [{}], { now: NOW })).toBe(300)
  })
})
