import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openPostgresEventStore, type PostgresEventStore } from '../../../src/infra/store/postgres/postgres-event-store'
import { connectPostgres, migrate, type Sql } from '../../../src/infra/store/postgres/postgres-schema'
import { runFenced, SESSION_FENCE_MIGRATIONS, storedGeneration } from '../../../src/infra/store/postgres/postgres-session-fence'
import { FencedError, type SessionFence } from '../../../src/infra/store/session-fence'
import { makeKeys, signEvent } from '../../support/events'
import { eventually } from '../../support/eventually'
import { createTestDatabase, type TestDatabase } from '../../support/postgres'
import { NOW } from './contract-context'

/**
 * The fence as the database enforces it, with two "nodes" (connection pools) on one PostgreSQL: the point of
 * the fence is what happens when a stale owner's transaction overlaps its successor's.
 */
let db: TestDatabase
let nodeA: Sql
let nodeB: Sql
let events: PostgresEventStore
beforeAll(async () => {
  db = await createTestDatabase()
  nodeA = connectPostgres(db.url, 2)
  nodeB = connectPostgres(db.url, 2)
  await migrate(nodeA, 'mesh', SESSION_FENCE_MIGRATIONS)
  events = await openPostgresEventStore({ url: db.url, groupCommitMaxEvents: 16, groupCommitMaxDelayMs: 1 })
})
afterAll(async () => {
  await Promise.all([nodeA?.end(), nodeB?.end(), events?.close()])
  await db?.drop()
})

const OLD = 'a'.repeat(64)
const NEW = 'b'.repeat(64)
const fenceOf = (community: string, generation: number, owner: string): SessionFence => ({
  community,
  session: 'channel:x',
  generation,
  owner,
})
const community = () => `f-${randomUUID().slice(0, 8)}`
const note = (content: string) => signEvent(makeKeys(), { kind: 1, content, created_at: NOW, tags: [['h', 'x']] })
const marks = (sql: Sql, c: string) => sql.unsafe('SELECT count(*)::int AS n FROM mesh_sessions WHERE community = $1', [c])

/** A fenced transaction that holds its claim (and so the session row's lock) until `release` is called. */
function holdingTransaction(sql: Sql, fence: SessionFence) {
  let release!: () => void
  const held = new Promise<void>((r) => {
    release = r
  })
  let claimed!: () => void
  const claimedNow = new Promise<void>((r) => {
    claimed = r
  })
  const done = runFenced(sql, fence, async () => {
    claimed()
    await held
  })
  return { release, claimedNow, done }
}

/** Resolves once a backend of this database is blocked on a lock (the fence's row lock here). */
async function someoneWaitsOnALock(): Promise<void> {
  const waiting = async () => {
    const [row] = await nodeB.unsafe(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
    )
    return row?.n as number
  }
  await eventually(waiting, (n) => n > 0, 'a backend blocked on a lock', { intervalMs: 10 })
}

describe('mesh session fence on PostgreSQL', () => {
  it('refuses a stale owner whose transaction waited behind its successor, even though it started first', async () => {
    const c = community()
    await runFenced(nodeA, fenceOf(c, 1, OLD), async () => {})
    const successor = holdingTransaction(nodeB, fenceOf(c, 2, NEW))
    await successor.claimedNow
    // the stale owner's claim blocks on the row lock the successor holds
    const stale = runFenced(nodeA, fenceOf(c, 1, OLD), (tx) =>
      tx.unsafe("INSERT INTO mesh_sessions VALUES ($1, 'channel:leak', 1, 'x')", [c]),
    )
    // handled from the start: the refusal may come before successor.done resolves (an unhandled rejection in CI)
    const refused = expect(stale).rejects.toBeInstanceOf(FencedError)
    await someoneWaitsOnALock()
    successor.release()
    await successor.done
    await refused
    expect(await storedGeneration(nodeA, c, 'channel:x')).toBe(2)
    expect((await marks(nodeA, c))[0]?.n).toBe(1) // the stale insert rolled back with its claim
  })

  it('lets a successor write after a stale owner that claimed first commits: generations only rise', async () => {
    const c = community()
    const old = holdingTransaction(nodeA, fenceOf(c, 1, OLD))
    await old.claimedNow
    const successor = runFenced(nodeB, fenceOf(c, 2, NEW), async () => 'written')
    await someoneWaitsOnALock()
    old.release()
    await old.done
    expect(await successor).toBe('written')
    await expect(runFenced(nodeA, fenceOf(c, 1, OLD), async () => {})).rejects.toMatchObject({ code: 'APIARY_MESH_FENCED' })
  })

  it("stores none of a stale owner's events, and all of the current owner's", async () => {
    const c = community()
    const fresh = note('by the owner')
    const [outcome] = await events.saveFenced([{ community: c, event: fresh.event, raw: fresh.raw }], fenceOf(c, 7, NEW))
    expect(outcome?.status).toBe('saved')
    const staleEvents = [note('stale 1'), note('stale 2')]
    const stale = events.saveFenced(
      staleEvents.map((e) => ({ community: c, event: e.event, raw: e.raw })),
      fenceOf(c, 6, OLD),
    )
    await expect(stale).rejects.toBeInstanceOf(FencedError)
    const stored = await events.query(c, [{ kinds: [1] }], { now: NOW + 10 })
    expect(stored.map((s) => s.event.id)).toEqual([fresh.event.id])
  })

  it('deletes nothing for a stale owner, and deletes for the current one', async () => {
    const c = community()
    const target = note('to be deleted')
    await events.saveFenced([{ community: c, event: target.event, raw: target.raw }], fenceOf(c, 3, NEW))
    await expect(events.deleteEventsFenced(c, [target.event.id], fenceOf(c, 2, OLD))).rejects.toBeInstanceOf(FencedError)
    expect((await events.query(c, [{ ids: [target.event.id] }], { now: NOW + 10 })).length).toBe(1)
    expect(await events.deleteEventsFenced(c, [target.event.id], fenceOf(c, 3, NEW))).toEqual([target.event.id])
    expect((await events.query(c, [{ ids: [target.event.id] }], { now: NOW + 10 })).length).toBe(0)
  })

  it('reads 0 as the stored generation of a session that never wrote', async () => {
    expect(await storedGeneration(nodeA, community(), 'channel:never')).toBe(0)
  })
})
