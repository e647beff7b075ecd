import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { JOB_READ_SQL } from '../../../src/infra/store/sqlite/sqlite-job-ledger'
import { toCountSql, toSelectSql, valueListsOf } from '../../../src/infra/store/sqlite/sqlite-query'
import { createReadRunner } from '../../../src/infra/store/sqlite/sqlite-read-core.mjs'
import { SAVE_SQL } from '../../../src/infra/store/sqlite/sqlite-save'
import { applyPragmas, migrate } from '../../../src/infra/store/sqlite/sqlite-schema'
import type { Filter } from '../../../src/protocols/nip01/filter'

const db = new Database(':memory:')
applyPragmas(db)
migrate(db)
// registers the budget function every read statement calls
createReadRunner(db)
afterAll(() => db.close())

const pk = (c: string) => c.repeat(64)
const planOf = (sql: string, params: unknown[]): string[] =>
  (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map((r) => r.detail)

// a SCAN of a table (with or without an index) walks it whole; SEARCH seeks a range
const fullScan = /^SCAN (e|t|x|events|tags|deleted_ids|deleted_addresses|jobs)\b/
// a plan may sort only the tie-break (id) of rows the index already yields newest first
const fullSort = 'USE TEMP B-TREE FOR ORDER BY'

// ids need no order from the index (one row per id); above MAX_PAIR_ARMS pairs an author's arm reads all of
// that author's events of the listed kinds and sorts them (the documented degradation in sqlite-query.ts)
const mayFullySort = new Set(['ids', 'long ids list', 'long authors × kinds lists'])

const shapes: Record<string, Filter> = {
  ids: { ids: [pk('a'), pk('b')] },
  authors: { authors: [pk('a'), pk('b')] },
  'authors+kinds': { authors: [pk('a'), pk('b')], kinds: [1, 7] },
  kinds: { kinds: [1, 6, 7] },
  '#e': { tags: { e: [pk('e'), pk('f')] } },
  '#p': { tags: { p: [pk('a')] } },
  '#d': { tags: { d: ['slug'] }, authors: [pk('a')] },
  '#h': { tags: { h: ['channel'] }, kinds: [9] },
  'kinds+#t': { kinds: [1], tags: { t: ['nostr', 'bees'] } },
  'two tags': { tags: { t: ['nostr'], p: [pk('a'), pk('b')] } },
  'since/until only': { since: 1, until: 2 },
  nothing: {},
  'long ids list': { ids: Array.from({ length: 500 }, (_, i) => String(i).padStart(64, '0')) },
  'long authors × kinds lists': { authors: Array.from({ length: 300 }, (_, i) => String(i)), kinds: [1, 6, 7, 9, 10] },
  'long tag list': { kinds: Array.from({ length: 100 }, (_, i) => i), tags: { e: Array.from({ length: 100 }, String) } },
}

describe('SQLite query plans', () => {
  for (const [shape, filter] of Object.entries(shapes)) {
    it(`answers ${shape} with index seeks, never a full scan, with or without a limit`, () => {
      for (const [f, opts] of [
        [filter, { now: 100 }],
        [{ ...filter, limit: 20 }, { now: 100 }],
        [
          { ...filter, limit: 20 },
          { now: 100, authorOnly: { kinds: [4, 1059], readers: ['r'] } },
        ],
      ] as const) {
        const q = toSelectSql('community', f, opts, 'rows')
        const plan = planOf(q.sql, q.params)
        expect(
          plan.filter((d) => fullScan.test(d)),
          plan.join(' | '),
        ).toEqual([])
        // read value by value, only the values' pages are sorted together (the outer sort, listed last)
        const perValue = plan.findIndex((d) => d.startsWith('CORRELATED'))
        const reads = perValue < 0 ? plan : plan.slice(perValue, -1)
        if (f.limit !== undefined && !mayFullySort.has(shape)) expect(reads, plan.join(' | ')).not.toContain(fullSort)
      }
    })
  }

  it('counts every shape at once without a full scan, with or without limits', () => {
    for (const limit of [undefined, 20]) {
      const filters = Object.values(shapes).map((f) => ({ ...f, limit }))
      const q = toCountSql('community', filters, { now: 100, authorOnly: { kinds: [4], readers: [] } })!
      const plan = planOf(q.sql, q.params)
      expect(
        plan.filter((d) => fullScan.test(d) && !d.startsWith('SCAN (subquery')),
        plan.join(' | '),
      ).toEqual([])
    }
  })

  for (const [shape, filter] of Object.entries(shapes)) {
    it(`counts ${shape} alone up to its limit with index seeks and no sort`, () => {
      const q = toCountSql('community', [{ ...filter, limit: 20 }], { now: 100 })!
      const plan = planOf(q.sql, q.params)
      expect(
        plan.filter((d) => fullScan.test(d)),
        plan.join(' | '),
      ).toEqual([])
      expect(plan, plan.join(' | ')).not.toContain(fullSort)
    })
  }

  it('reads a limited filter value by value of its driving lists, in one statement whatever their length', () => {
    expect(valueListsOf({ authors: ['a', 'b'], kinds: [1, 7], limit: 5 })?.map((l) => l.values)).toEqual([
      ['a', 'b'],
      [1, 7],
    ])
    // the tag with the fewest values drives; the other stays a condition
    expect(valueListsOf({ tags: { t: ['x', 'y'], e: ['z'] }, limit: 5 })).toBeUndefined()
    expect(valueListsOf({ kinds: [1, 7] })).toBeUndefined()
    const values = Array.from({ length: 1000 }, (_, i) => `v${i}`)
    const hidden = Array.from({ length: 1000 }, (_, i) => `c${i}`)
    const q = toSelectSql('community', { tags: { t: values }, limit: 20 }, { now: 100, hiddenChannels: hidden }, 'rows')
    // the values and the hidden list are one parameter each, not one copy per value
    expect(q.params.filter((p) => typeof p === 'string' && p.startsWith('['))).toHaveLength(2)
    expect(q.params.length).toBeLessThan(10)
    expect(planOf(q.sql, q.params).join(' | ')).toContain('CORRELATED LIST SUBQUERY')
  })

  for (const [name, sql] of Object.entries(SAVE_SQL)) {
    it(`runs the write step ${name} through an index`, () => {
      const params = Array.from({ length: (sql.match(/\?/g) ?? []).length }, () => 1)
      const plan = planOf(sql, params)
      expect(
        plan.filter((d) => fullScan.test(d)),
        plan.join(' | '),
      ).toEqual([])
    })
  }

  it('finds the stored versions of a replaceable or addressable event by its address index', () => {
    expect(planOf(SAVE_SQL.versions, [1, 1, 1, 1]).join(' | ')).toContain('events_by_address')
  })

  it("reads and writes a job's row by its primary key", () => {
    for (const sql of [SAVE_SQL.jobOf, SAVE_SQL.moveJob, SAVE_SQL.assignJob, SAVE_SQL.wholeJob, SAVE_SQL.cancelJob, JOB_READ_SQL.job]) {
      const params = Array.from({ length: (sql.match(/\?/g) ?? []).length }, () => 1)
      expect(planOf(sql, params).join(' | ')).toMatch(/SEARCH jobs USING PRIMARY KEY \(community=\? AND id=\?\)/)
    }
  })

  it("lists a capability's open jobs oldest first from the open-jobs index, without sorting them", () => {
    const plan = planOf(JOB_READ_SQL.openJobs, ['c', 'cap', 10])
    expect(plan.join(' | ')).toContain('USING INDEX jobs_open (community=? AND capability=?)')
    expect(plan.join(' | ')).not.toContain('TEMP B-TREE')
  })

  it("lists a community's capabilities with open jobs from the open-jobs index", () => {
    expect(planOf(JOB_READ_SQL.openCapabilities, ['c']).join(' | ')).toContain('USING INDEX jobs_open (community=?)')
  })
})
