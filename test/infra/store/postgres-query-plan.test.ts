import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openPostgresEventStore } from '../../../src/infra/store/postgres/postgres-event-store'
import { JOB_LEDGER_SQL } from '../../../src/infra/store/postgres/postgres-job-ledger'
import { toCountSql, toQuerySql } from '../../../src/infra/store/postgres/postgres-query'
import { SAVE_SQL } from '../../../src/infra/store/postgres/postgres-save'
import type { Filter } from '../../../src/protocols/nip01/filter'
import { createTestDatabase, type TestDatabase } from '../../support/postgres'

/**
 * With statistics on enough rows, PostgreSQL must answer every common filter shape and every write step
 * through an index. A small table may rightly be scanned, so the rows are made in SQL (no signatures needed
 * to plan): 20 000 events in 4 communities, 200 authors, 5 kinds, e/p/t/d tags, tombstones, versions, and
 * 5 000 jobs, most of them ended.
 */

let db: TestDatabase
let sql: postgres.Sql
beforeAll(async () => {
  db = await createTestDatabase()
  // opening the store creates the schema
  await (await openPostgresEventStore({ url: db.url, groupCommitMaxEvents: 1, groupCommitMaxDelayMs: 0 })).close()
  sql = postgres(db.url, { max: 1, onnotice: () => {} })
  await sql.unsafe(`
    INSERT INTO events (community, id, pubkey, kind, created_at, d_tag, expires_at, raw)
    SELECT 'c' || (i % 4), md5('id' || i) || md5('di' || i), md5('pk' || (i % 200)) || md5('kp' || (i % 200)),
      (ARRAY[1, 6, 7, 0, 30023])[1 + i % 5], 1700000000 - i,
      CASE i % 5 WHEN 3 THEN '' WHEN 4 THEN 'slug' || i ELSE NULL END, NULL, '{}'
    FROM generate_series(1, 20000) AS i;
    INSERT INTO tags (event_seq, name, value, community, kind, created_at)
    SELECT seq, t.name, t.value, community, kind, created_at FROM events,
      LATERAL (VALUES ('e', md5('e' || seq % 3000)), ('p', md5('pk' || seq % 500)), ('t', 'topic' || seq % 40),
        ('d', coalesce(d_tag, 'none'))) AS t (name, value);
    INSERT INTO versions (community, pubkey, kind, d, event_id, created_at)
    SELECT DISTINCT ON (community, pubkey, kind, d_tag) community, pubkey, kind, d_tag, id, created_at
    FROM events WHERE d_tag IS NOT NULL;
    INSERT INTO deleted_ids SELECT 'c' || (i % 4), md5('gone' || i), md5('pk' || i), 0 FROM generate_series(1, 5000) AS i;
    INSERT INTO deleted_addresses SELECT 'c' || (i % 4), 30023, md5('pk' || i), 'x' || i, 0 FROM generate_series(1, 5000) AS i;
    INSERT INTO jobs SELECT 'c' || (i % 4), md5('job' || i) || md5('boj' || i), 'cap' || (i % 5), md5('pk' || (i % 200)), 5000,
      (ARRAY['success', 'error', 'cancelled', 'success', 'queued', 'running'])[1 + i % 6], i % 3, NULL, i % 3, 1700000000000 + i, NULL
    FROM generate_series(1, 5000) AS i;
    ANALYZE;
  `)
})
afterAll(async () => {
  await sql?.end()
  await db?.drop()
})

const pk = (c: string) => c.repeat(64)
/** limits.maxRowsExamined: every read statement counts its rows, so the plans are checked with the count in */
const MAX_ROWS = 100_000
const shapes: Record<string, Filter> = {
  ids: { ids: [pk('a'), pk('b')] },
  authors: { authors: [pk('a'), pk('b')] },
  'authors+kinds': { authors: [pk('a'), pk('b')], kinds: [1, 7] },
  kinds: { kinds: [1, 6, 7] },
  '#e': { tags: { e: [pk('e'), pk('f')] } },
  '#p': { tags: { p: [pk('a')] } },
  '#d': { tags: { d: ['slug'] }, authors: [pk('a')] },
  '#h': { tags: { h: ['channel'] }, kinds: [9] },
  'kinds+#t': { kinds: [1], tags: { t: ['topic1', 'topic2'] } },
  'two tags': { tags: { t: ['topic3'], p: [pk('a'), pk('b')] } },
  'since/until only': { since: 1_699_990_000, until: 1_699_990_100 },
  nothing: {},
  'long authors × kinds lists': { authors: Array.from({ length: 300 }, (_, i) => pk(String(i % 10))), kinds: [1, 6, 7, 9, 10] },
}

// a small constant table (unnest, VALUES) is fine; a sequential scan of a stored table is not
const STORED = new Set(['events', 'tags', 'versions', 'deleted_ids', 'deleted_addresses', 'jobs'])
type PlanNode = { 'Node Type': string; 'Relation Name'?: string; Plans?: PlanNode[] }
const seqScans = (n: PlanNode): string[] => [
  ...(n['Node Type'] === 'Seq Scan' && STORED.has(n['Relation Name'] ?? '') ? [n['Relation Name']!] : []),
  ...(n.Plans ?? []).flatMap(seqScans),
]

/** The plan's sequential scans, both as planned for these values and as the generic plan a prepared statement reuses. */
async function scansOf(text: string, params: unknown[]): Promise<string[]> {
  const found: string[] = []
  for (const mode of ['force_custom_plan', 'force_generic_plan']) {
    await sql.unsafe(`SET plan_cache_mode = ${mode}`)
    const [row] = await sql.unsafe(`EXPLAIN (FORMAT JSON) ${text}`, params as never[], { prepare: true })
    found.push(...seqScans((row!['QUERY PLAN'] as { Plan: PlanNode }[])[0]!.Plan).map((r) => `${mode}: ${r}`))
  }
  return found
}

describe('PostgreSQL query plans', () => {
  for (const [shape, filter] of Object.entries(shapes)) {
    it(`answers ${shape} without a sequential scan, with or without a limit or an access rule`, async () => {
      for (const [f, opts] of [
        [filter, { now: 100 }],
        [{ ...filter, limit: 20 }, { now: 100 }],
        [
          { ...filter, limit: 20 },
          { now: 100, authorOnly: { kinds: [4, 1059], readers: [pk('r')] } },
        ],
      ] as const) {
        const q = toQuerySql('c1', [f], opts, MAX_ROWS)!
        expect(await scansOf(q.sql, q.params), q.sql).toEqual([])
      }
    })
  }

  it('reads every shape at once, as the one statement a REQ is, without a sequential scan', async () => {
    for (const limit of [undefined, 20]) {
      const filters = Object.values(shapes).map((f) => ({ ...f, limit }))
      const q = toQuerySql('c1', filters, { now: 100 }, MAX_ROWS)!
      expect(await scansOf(q.sql, q.params), q.sql).toEqual([])
    }
  })

  it('counts every shape at once without a sequential scan, with or without limits', async () => {
    for (const limit of [undefined, 20]) {
      const filters = Object.values(shapes).map((f) => ({ ...f, limit }))
      const q = toCountSql('c1', filters, { now: 100, authorOnly: { kinds: [4], readers: [] } }, MAX_ROWS)!
      expect(await scansOf(q.sql, q.params), q.sql).toEqual([])
    }
  })

  const writeParams: Record<keyof typeof SAVE_SQL, unknown[]> = {
    SAVE_EVENT: ['c1', pk('a'), pk('b'), 30023, 1, 'slug', null, '{}', ['t'], ['x'], true],
    SAVE_AND_ENQUEUE: ['c1', pk('a'), pk('b'), 5000, 1, null, null, '{}', ['c'], ['cap1'], true, 'cap1', 1, null],
    SAVE_AND_MOVE: ['c1', pk('a'), pk('b'), 7000, 1, null, null, '{}', ['e'], [pk('j')], true, pk('j'), 'running'],
    LOCK_JOB: ['c1', pk('a'), pk('j')],
    SAVE_REGULAR: [
      ['c1', 'c2'],
      [pk('a'), pk('c')],
      [pk('b'), pk('b')],
      [1, 7],
      [1, 2],
      [null, 5],
      '{}\x01{}',
      [1, 1, 2],
      ['t', 'p', 'e'],
      ['x', pk('b'), pk('a')],
    ],
    DELETE_LOSERS: ['c1', pk('b'), 30023, 'slug', pk('a')],
    DELETE_BY_ID: ['c1', pk('b'), [pk('a'), pk('c')], 1],
    DELETE_BY_ADDRESS: ['c1', pk('b'), [30023], ['slug'], 1],
    DELETE_EVENTS: ['c1', [pk('a'), pk('c')]],
  }
  for (const [name, text] of Object.entries(SAVE_SQL)) {
    it(`runs the write step ${name} through indexes`, async () => {
      // EXPLAIN without ANALYZE plans the write without running it
      expect(await scansOf(text, writeParams[name as keyof typeof SAVE_SQL])).toEqual([])
    })
  }

  const jobParams: Record<keyof typeof JOB_LEDGER_SQL, unknown[]> = {
    ASSIGN: ['c1', pk('j'), 0, pk('a')],
    JOB: ['c1', pk('j')],
    OPEN_JOBS: ['c1', 'cap1', 100],
    OPEN_JOBS_AFTER: ['c1', 'cap1', 100, 1, pk('j')],
    OPEN_CAPABILITIES: ['c1'],
  }
  for (const [name, text] of Object.entries(JOB_LEDGER_SQL)) {
    it(`runs the jobs table's ${name} through indexes`, async () => {
      expect(await scansOf(text, jobParams[name as keyof typeof JOB_LEDGER_SQL])).toEqual([])
    })
  }

  it("lists a capability's open jobs from the open-jobs index", async () => {
    for (const mode of ['force_custom_plan', 'force_generic_plan']) {
      await sql.unsafe(`SET plan_cache_mode = ${mode}`)
      const rows = await sql.unsafe(`EXPLAIN ${JOB_LEDGER_SQL.OPEN_JOBS}`, ['c1', 'cap1', 100], { prepare: true })
      // the planner may sort a few rows rather than read the index in order; either way only open rows are read
      expect(rows.map((r) => r['QUERY PLAN'] as string).join(' | '), mode).toContain('jobs_open')
    }
  })
})
