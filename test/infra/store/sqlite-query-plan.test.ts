import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { armsOf, toCountSql, toSelectSql } from '../../../src/infra/store/sqlite/sqlite-query'
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
const fullScan = /^SCAN (e|t|x|events|tags|deleted_ids|deleted_addresses)\b/
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
        for (const arm of armsOf(f)) {
          const q = toSelectSql('community', arm, opts, 'rows')
          const plan = planOf(q.sql, q.params)
          expect(
            plan.filter((d) => fullScan.test(d)),
            plan.join(' | '),
          ).toEqual([])
          if (f.limit !== undefined && !mayFullySort.has(shape)) expect(plan, plan.join(' | ')).not.toContain(fullSort)
        }
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

  it('splits a limited filter into one arm per driving value', () => {
    expect(armsOf({ authors: ['a', 'b'], kinds: [1, 7], limit: 5 })).toHaveLength(4)
    // the tag with the fewest values drives; the other stays a condition
    const twoTags: Filter = { tags: { t: ['x', 'y'], e: ['z'] }, limit: 5 }
    expect(armsOf(twoTags)).toEqual([twoTags])
    expect(armsOf({ kinds: [1, 7] })).toHaveLength(1)
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
})
