import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SaveOutcome } from '../../../src/infra/store/event-store'
import { openPostgresEventStore, type PostgresEventStore } from '../../../src/infra/store/postgres/postgres-event-store'
import { commitBatch } from '../../../src/infra/store/postgres/postgres-save'
import { connectPostgres, type Sql, toIndexText } from '../../../src/infra/store/postgres/postgres-schema'
import { type EventTemplate, makeKeys, type SignedEvent, signEvent, type TestKeys } from '../../support/events'
import { createTestDatabase, type TestDatabase } from '../../support/postgres'
import { at, idsOf, NOW } from './contract-context'
import { enqueue, report, request, requester } from './job-ledger.contract'

/**
 * One group-commit batch mixing every kind of decision. Runs of regular events share one multi-row statement
 * (postgres-save.ts); each event of the batch must still get the outcome it gets when saved alone, in order.
 */

let db: TestDatabase
let store: PostgresEventStore
let sql: Sql
beforeAll(async () => {
  db = await createTestDatabase()
  // a batch far larger than any test's, and a delay long enough that a same-tick burst is always one commit
  store = await openPostgresEventStore({ url: db.url, groupCommitMaxEvents: 512, groupCommitMaxDelayMs: 50 })
  // the store's own connection settings: BIGINT columns read back as numbers
  sql = connectPostgres(db.url, 1)
})
afterAll(async () => {
  await store?.close()
  await sql?.end()
  await db?.drop()
})

const alice = makeKeys()
const bob = makeKeys()
const note = (keys: TestKeys, t: EventTemplate = {}) => signEvent(keys, { created_at: at(100), ...t })
const deletion = (keys: TestKeys, ...targets: SignedEvent[]) => note(keys, { kind: 5, tags: targets.map((t) => ['e', t.event.id]) })

interface Save {
  community: string
  e: SignedEvent
}

/** Submits every save in the same tick and checks they shared one transaction. */
async function saveInOneBatch(saves: readonly Save[]): Promise<SaveOutcome[]> {
  const before = store.stats().transactions
  const outcomes = await Promise.all(saves.map((s) => store.save(s.community, s.e.event, s.e.raw)))
  expect(store.stats().transactions - before).toBe(1)
  return outcomes
}

async function saveOneByOne(saves: readonly Save[]): Promise<SaveOutcome[]> {
  const outcomes: SaveOutcome[] = []
  for (const s of saves) outcomes.push(await store.save(s.community, s.e.event, s.e.raw))
  return outcomes
}

/** The `tags` rows of an event, as stored. */
async function tagRowsOf(community: string, id: string) {
  const rows = await sql`
    SELECT t.name, t.value, t.kind, t.created_at, t.community FROM tags t JOIN events e ON e.seq = t.event_seq
    WHERE e.community = ${community} AND e.id = ${id} ORDER BY t.name, t.value`
  return rows.map((r) => ({ ...r }))
}

/** What `tags` must hold for an event: single-letter names with a value, each (name, value) once. */
function expectedTagRows(community: string, e: SignedEvent) {
  const rows = new Map<string, object>()
  for (const [name, value] of e.event.tags) {
    if (name === undefined || value === undefined || !/^[A-Za-z]$/.test(name)) continue
    const v = toIndexText(value)
    rows.set(`${name}\0${v}`, { name, value: v, kind: e.event.kind, created_at: e.event.created_at, community })
  }
  return [...rows.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, r]) => r)
}

// DELETE ... RETURNING lists a kind 5's removals in no particular order
const sortedRemovals = (o: SaveOutcome) => (o.status === 'saved' ? { ...o, removedIds: [...o.removedIds].sort() } : o)

const saved: SaveOutcome = { status: 'saved', removedIds: [] }
const duplicate: SaveOutcome = { status: 'duplicate' }
const deleted: SaveOutcome = { status: 'deleted' }

describe('one PostgreSQL batch mixing regular, replaceable, addressable and deletion events', () => {
  it('gives every event the outcome it gets alone, in arrival order, and stores exactly the saved rows and tags', async () => {
    const community = `batch-${randomUUID()}`
    const other = `batch-other-${randomUUID()}`
    const stored = note(alice, { content: 'stored before the batch' })
    const tombstoned = note(alice, { content: 'deleted before it arrived' })
    expect(await store.save(community, stored.event, stored.raw)).toEqual(saved)
    const early = deletion(alice, tombstoned)
    expect(await store.save(community, early.event, early.raw)).toEqual(saved)

    const tagged = note(alice, {
      content: 'many tags',
      tags: [
        ['t', 'batch-x'],
        ['t', 'batch-x'],
        ['T', 'upper'],
        ['p', bob.pubkey],
        ['e', stored.event.id, 'wss://relay.example', 'reply'],
        ['title', 'multi-letter names are not indexed'],
        ['t'],
        ['t', 'x'.repeat(2000)],
        ['t', 'nul\u0000inside'],
        ...Array.from({ length: 40 }, (_, i) => ['t', `batch-many-${i}`]),
      ],
    })
    const byBob = note(bob, { content: 'bob', tags: [['t', 'batch-bob']] })
    const repeated = note(alice, { content: 'sent twice in one run', tags: [['t', 'batch-repeated']] })
    const profile = note(alice, { kind: 0, content: '{"name":"alice"}' })
    const middle = note(alice, {
      kind: 7,
      content: '+',
      tags: [
        ['e', stored.event.id],
        ['t', 'batch-middle'],
      ],
    })
    const doomed = note(alice, { content: 'deleted later in the same batch', tags: [['t', 'batch-doomed']] })
    const later = note(alice, { content: 'deleted earlier in the same batch', tags: [['t', 'batch-later']] })
    const deletesDoomed = deletion(alice, doomed)
    const deletesLater = deletion(alice, later)
    const article = note(alice, {
      kind: 30_023,
      tags: [
        ['d', 'post'],
        ['t', 'batch-article'],
      ],
    })
    const expiring = note(alice, {
      content: 'expires',
      tags: [
        ['expiration', String(NOW + 60)],
        ['t', 'batch-expiring'],
      ],
    })
    const notBobs = note(alice, { content: "bob's deletion cannot touch it", tags: [['t', 'batch-not-bobs']] })
    const bobDeletes = deletion(bob, notBobs)
    const last = note(bob, { content: 'last', tags: [['t', 'batch-last']] })

    const batch: [Save, SaveOutcome][] = [
      [{ community, e: tagged }, saved],
      // the same id in another community is another event, in the same run
      [{ community: other, e: tagged }, saved],
      [{ community, e: byBob }, saved],
      [{ community, e: stored }, duplicate],
      [{ community, e: repeated }, saved],
      [{ community, e: repeated }, duplicate],
      [{ community, e: profile }, saved],
      [{ community, e: middle }, saved],
      [{ community, e: doomed }, saved],
      [
        { community, e: deletesDoomed },
        { status: 'saved', removedIds: [doomed.event.id] },
      ],
      [{ community, e: deletesLater }, saved],
      [{ community, e: later }, deleted],
      [{ community, e: article }, saved],
      [{ community, e: tombstoned }, deleted],
      [{ community, e: tombstoned }, deleted],
      [{ community, e: expiring }, saved],
      [{ community, e: repeated }, duplicate],
      [{ community, e: bobDeletes }, saved],
      [{ community, e: notBobs }, saved],
      [{ community: other, e: tagged }, duplicate],
      [{ community, e: last }, saved],
    ]
    const outcomes = await saveInOneBatch(batch.map(([s]) => s))
    for (const [i, [s, expected]] of batch.entries()) {
      expect({ i, content: s.e.event.content, outcome: outcomes[i] }).toEqual({ i, content: s.e.event.content, outcome: expected })
    }

    const kept = [
      stored,
      early,
      tagged,
      byBob,
      repeated,
      profile,
      middle,
      deletesDoomed,
      deletesLater,
      article,
      expiring,
      bobDeletes,
      notBobs,
      last,
    ]
    const everyId = [...new Set([early, ...batch.map(([s]) => s.e)].map((e) => e.event.id))]
    const got = await store.query(community, [{ ids: everyId }], { now: NOW })
    expect(new Set(idsOf(got))).toEqual(new Set(kept.map((e) => e.event.id)))
    for (const g of got) expect(g.raw).toBe(kept.find((e) => e.event.id === g.id)!.raw)
    expect(idsOf(await store.query(other, [{ ids: everyId }], { now: NOW }))).toEqual([tagged.event.id])

    for (const e of kept) expect(await tagRowsOf(community, e.event.id)).toEqual(expectedTagRows(community, e))
    expect(await tagRowsOf(other, tagged.event.id)).toEqual(expectedTagRows(other, tagged))
    expect(expectedTagRows(community, tagged)).toHaveLength(46)

    const find = (tags: Record<string, string[]>, c = community, now = NOW) => store.query(c, [{ tags }], { now }).then(idsOf)
    expect(await find({ t: ['batch-many-39', 'x'.repeat(2000), 'nul\u0000inside'] })).toEqual([tagged.event.id])
    expect(await find({ T: ['upper'] }, other)).toEqual([tagged.event.id])
    expect(await find({ t: ['batch-middle'] })).toEqual([middle.event.id])
    expect(await find({ t: ['batch-last'] })).toEqual([last.event.id])
    expect(await find({ t: ['batch-later', 'batch-doomed'] })).toEqual([])
    // expires_at went to the right row: the expiring event alone disappears after its expiration
    expect(await find({ t: ['batch-expiring', 'batch-not-bobs'] })).toEqual([expiring.event.id, notBobs.event.id].sort())
    expect(await find({ t: ['batch-expiring', 'batch-not-bobs'] }, community, NOW + 61)).toEqual([notBobs.event.id])
  })

  it('stores each raw of a run exactly as given, and saves a raw holding U+0001 (the run separator) on its own', async () => {
    const community = `raw-${randomUUID()}`
    const quoted = note(alice, { content: 'quotes " and \\ backslashes, ünïcödé, \u2028 and a tab\t' })
    const plain = note(bob, { content: 'plain' })
    const odd = note(alice, { content: 'odd' })
    // not JSON (no client can send it); the store takes raw as an opaque string and must not cut it
    const oddRaw = odd.raw.replace('{', '{\x01')
    const outcomes = await saveInOneBatch([
      { community, e: quoted },
      { community, e: { ...odd, raw: oddRaw } },
      { community, e: plain },
    ])
    expect(outcomes).toEqual([saved, saved, saved])
    const rows = await sql`SELECT id, raw FROM events WHERE community = ${community}`
    expect(Object.fromEntries(rows.map((r) => [r.id, r.raw]))).toEqual({
      [quoted.event.id]: quoted.raw,
      [odd.event.id]: oddRaw,
      [plain.event.id]: plain.raw,
    })
  })

  it('decides random mixes of repeats, deletions and versions in one batch as one-by-one saves do', async () => {
    // a small pool drawn with repetition: repeats inside a run, deletions before and after their targets
    const regular = Array.from({ length: 10 }, (_, i) =>
      note(i % 3 ? alice : bob, {
        kind: i % 2 ? 1 : 7,
        content: `pool ${i}`,
        tags: [
          ['t', `pool-${i}`],
          ['p', alice.pubkey],
        ],
      }),
    )
    const pool = [
      ...regular,
      deletion(alice, regular[1]!, regular[2]!, regular[3]!),
      deletion(bob, regular[0]!, regular[1]!),
      note(alice, { kind: 0, content: 'profile 1', created_at: at(50) }),
      note(alice, { kind: 0, content: 'profile 2', created_at: at(40) }),
      note(bob, {
        kind: 30_000,
        tags: [
          ['d', 'list'],
          ['t', 'pool-list'],
        ],
      }),
    ]
    let seed = 7
    const random = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
      return seed % n
    }
    for (let round = 0; round < 8; round++) {
      const picks = Array.from({ length: 30 }, () => pool[random(pool.length)]!)
      const [batched, alone] = [`mix-${round}-batch-${randomUUID()}`, `mix-${round}-alone-${randomUUID()}`]
      const outcomes = await saveInOneBatch(picks.map((e) => ({ community: batched, e })))
      const expected = await saveOneByOne(picks.map((e) => ({ community: alone, e })))
      expect(outcomes.map(sortedRemovals)).toEqual(expected.map(sortedRemovals))
      const everyId = pool.map((e) => e.event.id)
      const [a, b] = await Promise.all([batched, alone].map((c) => store.query(c, [{ ids: everyId }], { now: NOW })))
      expect(idsOf(a!)).toEqual(idsOf(b!))
      for (const e of pool) {
        const rows = await tagRowsOf(batched, e.event.id)
        const reference = await tagRowsOf(alone, e.event.id)
        expect(rows.map(({ community: _, ...r }) => r)).toEqual(reference.map(({ community: _, ...r }) => r))
      }
    }
  })
})

describe('one PostgreSQL batch holding writes to the jobs table', () => {
  it("decides a job's reports against its row as the events before them in the batch left it", async () => {
    const community = `jobs-${randomUUID()}`
    const agent = makeKeys()
    const job = request({ content: 'assigned before the batch' })
    expect(await store.save(community, job.event, job.raw, enqueue())).toEqual(saved)
    expect(await store.jobs.assign(community, job.event.id, 0, agent.pubkey)).toMatchObject({ status: 'assigned', generation: 1 })
    const fresh = request({ content: 'queued in the batch' })
    const before = note(alice, { content: 'a note in the same run as nothing' })
    const accepted = report(agent, job, 1, 'processing')
    const intruder = report(bob, job, 1, 'result')
    const result = report(agent, job, 1, 'result')
    const late = report(agent, job, 1, 'partial')
    // nobody holds the job queued earlier in the batch
    const early = report(agent, fresh, 1, 'processing')
    const cancels = deletion(requester, fresh)
    const transactions = store.stats().transactions
    const outcomes = await Promise.all(
      (
        [
          [before, undefined],
          [fresh, enqueue(1)],
          [accepted.e, accepted.write],
          [intruder.e, intruder.write],
          [before, undefined],
          [result.e, result.write],
          [late.e, late.write],
          [early.e, early.write],
          [accepted.e, accepted.write],
          [cancels, undefined],
        ] as const
      ).map(([e, write]) => store.save(community, e.event, e.raw, write)),
    )
    expect(store.stats().transactions - transactions).toBe(1)
    expect(outcomes.map((o) => o.status)).toEqual([
      'saved',
      'saved',
      'saved',
      'fenced',
      'duplicate',
      'saved',
      'fenced',
      'fenced',
      'duplicate',
      'saved',
    ])
    expect(outcomes.at(-1)).toEqual({ status: 'saved', removedIds: [fresh.event.id] })
    const stored = await store.query(community, [{ ids: [accepted, intruder, result, late, early].map((r) => r.e.event.id) }], { now: NOW })
    expect(new Set(idsOf(stored))).toEqual(new Set([accepted.e.event.id, result.e.event.id]))
    expect(await store.jobs.job(community, job.event.id)).toMatchObject({ state: 'success', generation: 1 })
    // queued in the batch, and cancelled by its author's deletion later in it
    expect(await store.jobs.job(community, fresh.event.id)).toMatchObject({ state: 'cancelled', generation: 1, queuedAtMs: 1 })
  })
})

describe('a batch whose statement fails (BEGIN, statements and COMMIT leave together)', () => {
  it('rolls the whole batch back, rejects with the failing statement’s error, and leaves its connection clean', async () => {
    // one connection: the next batch must run on the very connection the failed one used
    const one = connectPostgres(db.url, 1)
    try {
      const community = randomUUID()
      const good = note(alice, { content: 'kept out by its neighbour' })
      const bad = note(bob, { content: 'nul' })
      // PostgreSQL text cannot hold NUL: the run's statement fails on the server
      const badRaw = bad.raw.replace('"content":"nul"', '"content":"\u0000"')
      const error = (await commitBatch(one, [
        { community, event: good.event, raw: good.raw },
        { community, event: bad.event, raw: badRaw },
      ]).catch((e: unknown) => e)) as { code?: string }
      expect(error).toBeInstanceOf(Error)
      expect(error.code).not.toBe('25P02')
      const stored = async () => (await one`SELECT id FROM events WHERE community = ${community} ORDER BY id`).map((r) => r.id as string)
      // on the same connection: a transaction left open would show the good row, an aborted one would fail
      expect(await stored()).toEqual([])
      expect(await commitBatch(one, [{ community, event: good.event, raw: good.raw }])).toEqual([saved])
      expect(await stored()).toEqual([good.event.id])
    } finally {
      await one.end()
    }
  })

  it("rolls the whole batch back when a statement before a job's report fails, and decides the report again after", async () => {
    const one = connectPostgres(db.url, 1)
    try {
      const community = randomUUID()
      const agent = makeKeys()
      const job = request({ content: 'for the rolled-back batch' })
      await store.save(community, job.event, job.raw, enqueue())
      await store.jobs.assign(community, job.event.id, 0, agent.pubkey)
      const bad = note(bob, { content: 'nul' })
      const badRaw = bad.raw.replace('"content":"nul"', '"content":"\u0000"')
      const accepted = report(agent, job, 1, 'processing')
      const reported = { community, event: accepted.e.event, raw: accepted.e.raw, job: accepted.write }
      const error = (await commitBatch(one, [{ community, event: bad.event, raw: badRaw }, reported]).catch((e: unknown) => e)) as {
        code?: string
      }
      expect(error).toBeInstanceOf(Error)
      expect(error.code).not.toBe('25P02')
      expect(await store.jobs.job(community, job.event.id)).toMatchObject({ state: 'assigned' })
      expect(await commitBatch(one, [reported])).toEqual([saved])
      expect(await store.jobs.job(community, job.event.id)).toMatchObject({ state: 'running' })
    } finally {
      await one.end()
    }
  })
})
