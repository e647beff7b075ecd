import Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { createKernel, type Kernel } from '../../../src/actors/kernel'
import { STORE_WRITER_PATH, spawnStoreWriter } from '../../../src/actors/node/store-writer-actor'
import { NOW } from '../../infra/store/contract-context'
import { sqliteFiles } from '../../infra/store/sqlite-files'
import { makeKeys, signEvent } from '../../support/events'
import { eventually } from '../../support/eventually'
import { type EventLog, recordEvents } from '../kernel/harness'
import { ManualClock } from '../kernel/manual-clock'

/**
 * The node's store-writer actor over a real SQLite store whose writer threads cannot start (a table their
 * statements need is gone), on the real kernel with a clock the test moves.
 */
const { freshFile, open, close } = sqliteFiles('writer-actor')

let kernel: Kernel
let clock: ManualClock
let events: EventLog
afterEach(async () => {
  await kernel.shutdown()
})

// writer threads take tens of milliseconds each to start and fail: waits poll the clock, not event-loop turns

/** a store whose writer threads die while starting until `repair` puts the table back */
async function storeWithBrokenWriter() {
  const file = freshFile()
  await close(open(file, { writerThread: false }))
  const admin = new Database(file)
  const schema = admin.prepare("SELECT sql FROM sqlite_master WHERE name = 'deleted_addresses'").pluck().get() as string
  admin.exec('DROP TABLE deleted_addresses')
  const store = open(file)
  const repair = () => {
    admin.exec(schema)
    admin.close()
  }
  return { store, repair }
}

/** A store whose writer threads cannot start, under the node supervisor on a clock the test moves: it has backed off once. */
async function supervisedBrokenWriter() {
  clock = new ManualClock()
  kernel = createKernel({ clock, random: () => 0 })
  events = recordEvents(kernel)
  const broken = await storeWithBrokenWriter()
  spawnStoreWriter(kernel, broken.store.writerLifecycle()!)
  await eventually(() => events.of('backoff', STORE_WRITER_PATH).length === 1, 'a backoff', { timeoutMs: 15_000 })
  return broken
}

describe('the SQLite writer under the node supervisor', () => {
  it('brings a writer thread back after backoff once threads start again, writing on the main thread meanwhile, and readiness stays clean', async () => {
    const { store, repair } = await supervisedBrokenWriter()
    expect(store.stats().writerThread).toBe(false)
    expect(events.of('crashed', STORE_WRITER_PATH)[0]).toMatchObject({ supervisor: 'root/node/store-writer', msgType: 'GaveUp' })
    expect(events.of('backoff', STORE_WRITER_PATH)[0]).toMatchObject({ delayMs: 10_000, attempt: 1 })
    expect(kernel.unhealthy()).toEqual([])
    // the table is back, and the writes go on on the main thread until supervision asks for a thread again
    repair()
    const alice = makeKeys()
    const meanwhile = signEvent(alice, { content: 'on the main thread' })
    expect(await store.save('c', meanwhile.event, meanwhile.raw)).toMatchObject({ status: 'saved' })
    expect(store.stats().writerThread).toBe(false)
    clock.advance(10_000)
    await eventually(() => events.of('restarted', STORE_WRITER_PATH).length === 1, 'a restart', { timeoutMs: 15_000 })
    await eventually(() => store.stats().writerThread, 'writes back on a thread', { timeoutMs: 15_000 })
    const after = signEvent(alice, { content: 'on the thread again' })
    expect(await store.save('c', after.event, after.raw)).toMatchObject({ status: 'saved' })
    expect(store.stats()).toMatchObject({ writerThread: true, writerRespawns: 2 })
    expect(await store.count('c', [{}], { now: NOW })).toBe(2)
    expect(events.of('gave-up')).toEqual([])
  })

  it('tries again with a longer wait while threads keep failing to start', async () => {
    const { store, repair } = await supervisedBrokenWriter()
    clock.advance(10_000)
    await eventually(() => events.of('backoff', STORE_WRITER_PATH).length === 2, 'a second backoff', { timeoutMs: 15_000 })
    expect(events.of('backoff', STORE_WRITER_PATH).map((e) => e.delayMs)).toEqual([10_000, 20_000])
    expect(store.stats().writerThread).toBe(false)
    repair()
  })
})
