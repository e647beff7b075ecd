import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createBanLookup } from '../../../src/infra/store/ban-lookup'
import type { CommunityStore } from '../../../src/infra/store/community-store'
import { openSqliteCommunityStore } from '../../../src/infra/store/sqlite/sqlite-community-store'

const NOW = 1_700_000_000
const pubkey = (i: number) => i.toString(16).padStart(64, '0')

describe('the per-write ban lookup', () => {
  let dir = ''
  let store: CommunityStore | undefined
  afterEach(async () => {
    await store?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  /**
   * The real SQLite store behind a counter; `hold()` makes the next queries wait until `release()`, so a test
   * can make lookups arrive while a query is in flight. `failNext` makes the next query reject.
   */
  function openCountingStore() {
    dir = mkdtempSync(join(tmpdir(), 'apiary-ban-'))
    const real = openSqliteCommunityStore(join(dir, 'c.sqlite'))
    store = real
    const queries: string[][] = []
    let held: Promise<void> | undefined
    let release = () => {}
    let failNext = false
    const counting: Pick<CommunityStore, 'bannedAmong'> = {
      async bannedAmong(community, pubkeys, now) {
        queries.push([...pubkeys])
        if (failNext) {
          failNext = false
          throw new Error('store down')
        }
        const answer = real.bannedAmong(community, pubkeys, now)
        if (held) await held
        return answer
      },
    }
    return {
      real,
      counting,
      queries,
      hold() {
        held = new Promise((resolve) => {
          release = () => {
            held = undefined
            resolve()
          }
        })
      },
      release: () => release(),
      failNext() {
        failNext = true
      },
    }
  }

  it('shares one store query among concurrent lookups, and never answers from a stale result', async () => {
    const s = openCountingStore()
    const banOf = createBanLookup(s.counting, () => NOW)
    expect(await Promise.all(Array.from({ length: 20 }, () => banOf('c', pubkey(1))))).toEqual(Array(20).fill(undefined))
    expect(s.queries).toHaveLength(1)
    await s.real.banPubkey('c', pubkey(1), 'spam')
    // the row written after the last lookup settled is seen by the very next one
    expect(await banOf('c', pubkey(1))).toEqual({ reason: 'spam' })
    expect(s.queries).toHaveLength(2)
  })

  it('asks once for every pubkey that writes in the same turn, and answers each its own', async () => {
    const s = openCountingStore()
    await s.real.banPubkey('c', pubkey(3), 'spam')
    const banOf = createBanLookup(s.counting, () => NOW)
    const answers = await Promise.all([1, 2, 3, 4, 3].map((i) => banOf('c', pubkey(i))))
    expect(answers).toEqual([undefined, undefined, { reason: 'spam' }, undefined, { reason: 'spam' }])
    expect(s.queries).toEqual([[pubkey(1), pubkey(2), pubkey(3), pubkey(4)]])
  })

  it('sends the lookups that arrive while a query is out together in the next one, which sees a ban written meanwhile', async () => {
    const s = openCountingStore()
    const banOf = createBanLookup(s.counting, () => NOW)
    s.hold()
    const first = banOf('c', pubkey(1))
    await Promise.resolve()
    expect(s.queries).toHaveLength(1)
    // in the query in flight: shares its answer; the others wait for the next query
    const again = banOf('c', pubkey(1))
    const later = [2, 3, 4].map((i) => banOf('c', pubkey(i)))
    await s.real.banPubkey('c', pubkey(3), 'spam')
    expect(s.queries).toHaveLength(1)
    s.release()
    expect(await first).toBeUndefined()
    expect(await again).toBeUndefined()
    expect(await Promise.all(later)).toEqual([undefined, { reason: 'spam' }, undefined])
    expect(s.queries).toEqual([[pubkey(1)], [pubkey(2), pubkey(3), pubkey(4)]])
  })

  it('keeps communities apart: a ban in one is no ban in another, each asked in its own query', async () => {
    const s = openCountingStore()
    await s.real.banPubkey('here', pubkey(1), 'spam')
    const banOf = createBanLookup(s.counting, () => NOW)
    expect(await Promise.all([banOf('here', pubkey(1)), banOf('there', pubkey(1))])).toEqual([{ reason: 'spam' }, undefined])
    expect(s.queries).toHaveLength(2)
  })

  it('splits a turn with more than 500 writers into queries of at most 500 pubkeys, sent at once', async () => {
    const s = openCountingStore()
    await s.real.banPubkey('c', pubkey(550), 'spam')
    const banOf = createBanLookup(s.counting, () => NOW)
    const answers = await Promise.all(Array.from({ length: 600 }, (_, i) => banOf('c', pubkey(i))))
    expect(s.queries.map((q) => q.length)).toEqual([500, 100])
    expect(answers.filter(Boolean)).toEqual([{ reason: 'spam' }])
    expect(answers[550]).toEqual({ reason: 'spam' })
  })

  it('fails the lookups of a store that throws instead of rejecting, and asks again at the next lookup', async () => {
    const s = openCountingStore()
    let throwing = true
    const banOf = createBanLookup(
      {
        bannedAmong(...args) {
          if (throwing) throw new Error('store bug')
          return s.counting.bannedAmong(...args)
        },
      },
      () => NOW,
    )
    await expect(banOf('c', pubkey(1))).rejects.toThrow('store bug')
    throwing = false
    expect(await banOf('c', pubkey(1))).toBeUndefined()
  })

  it('fails only the lookups of a query that failed; the next lookup asks again', async () => {
    const s = openCountingStore()
    await s.real.banPubkey('c', pubkey(2), 'spam')
    const banOf = createBanLookup(s.counting, () => NOW)
    s.failNext()
    const failed = await Promise.allSettled([banOf('c', pubkey(1)), banOf('c', pubkey(2))])
    expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected'])
    expect(await banOf('c', pubkey(2))).toEqual({ reason: 'spam' })
    expect(s.queries).toHaveLength(2)
  })
})
