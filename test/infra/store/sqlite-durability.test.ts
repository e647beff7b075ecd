import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import type { Durability } from '../../../src/infra/store/event-store'
import { applyDurability } from '../../../src/infra/store/sqlite/sqlite-write-core.mjs'
import { makeKeys, signEvent } from '../../support/events'
import { sqliteFiles } from './sqlite-files'

const { freshFile, open } = sqliteFiles('durability')

/** PRAGMA synchronous as SQLite reports it */
const NORMAL = 1
const FULL = 2

describe('store.durability on SQLite', () => {
  const alice = makeKeys()
  const cases: [Durability, number][] = [
    ['process', NORMAL],
    ['power', FULL],
  ]

  it.each(cases)('%s: the writer thread commits with synchronous %i', async (durability, synchronous) => {
    const store = open(freshFile(), { durability })
    const note = signEvent(alice, { content: durability })
    // a commit answered by the thread: it is Ready, and its level is the one the commit ran at
    expect(await store.save('c', note.event, note.raw)).toMatchObject({ status: 'saved' })
    expect(store.stats()).toMatchObject({ writerThread: true, writerSynchronous: synchronous })
  })

  it.each(cases)('%s: the main-thread writer (writerThread false) commits with synchronous %i', async (durability, synchronous) => {
    const store = open(freshFile(), { durability, writerThread: false })
    const note = signEvent(alice, { content: durability })
    expect(await store.save('c', note.event, note.raw)).toMatchObject({ status: 'saved' })
    expect(store.stats()).toMatchObject({ writerThread: false, writerSynchronous: synchronous })
  })

  it('keeps the level on the writer thread that replaces a dead one', async () => {
    const store = open(freshFile(), { durability: 'power' })
    const first = signEvent(alice, { content: 'first' })
    await store.save('c', first.event, first.raw)
    store.crashWriterOnNextCommitForTest()
    const lost = signEvent(alice, { content: 'lost' })
    await expect(store.save('c', lost.event, lost.raw)).rejects.toThrow()
    expect(await store.save('c', lost.event, lost.raw)).toMatchObject({ status: 'saved' })
    expect(store.stats()).toMatchObject({ writerThread: true, writerRespawns: 1, writerSynchronous: FULL })
  })

  it('defaults to process, and refuses a level it does not know rather than leave SQLite to pick one', async () => {
    const store = open(freshFile())
    const note = signEvent(alice, { content: 'default' })
    await store.save('c', note.event, note.raw)
    expect(store.stats().writerSynchronous).toBe(NORMAL)
    const db = new Database(':memory:')
    expect(() => applyDurability(db, 'disk' as Durability)).toThrow(/unknown store durability: disk/)
    db.close()
  })
})
