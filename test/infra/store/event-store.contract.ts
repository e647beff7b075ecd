import { randomUUID } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type EventStore, StoreError } from '../../../src/infra/store/event-store'
import type { Filter } from '../../../src/protocols/nip01/filter'
import { type EventTemplate, makeKeys, type SignedEvent, signEvent, type TestKeys } from '../../support/events'
import { at, type ContractContext, idsOf, NOW } from './contract-context'
import { describeRemovalContract } from './event-store-removal.contract'
import { describeDeletionContract, describeReplaceableContract } from './event-store-versions.contract'

/**
 * The EventStore contract: every backend (SQLite, PostgreSQL) runs these same tests. Each test owns a fresh
 * community id, so backends that share one database across tests never see each other's rows.
 */

export interface EventStoreContractOptions {
  /**
   * Opens a store whose backend really fails (a trigger, a constraint; no mocks) every write transaction
   * holding an event whose content contains `marker`. Without it the fault test is skipped.
   */
  openWithWriteFault?: (marker: string) => Promise<EventStore>
  /** committed write transactions so far; without it the group-commit test is skipped */
  transactionsOf?: (store: EventStore) => number
}

const alice = makeKeys()
const bob = makeKeys()

export function describeEventStoreContract(name: string, open: () => Promise<EventStore>, options: EventStoreContractOptions = {}): void {
  describe(`${name} event store`, () => {
    const ctx = {} as ContractContext
    beforeEach(async () => {
      const store = await open()
      const community = `c-${randomUUID()}`
      Object.assign(ctx, {
        store,
        community,
        alice,
        bob,
        save: (e: SignedEvent, c = community) => store.save(c, e.event, e.raw),
        query: (filters: Filter[], c = community) => store.query(c, filters, { now: NOW }),
      })
    })
    afterEach(() => ctx.store.close())

    describeBasics(ctx)
    describeReplaceableContract(ctx)
    describeDeletionContract(ctx)
    describeRemovalContract(ctx)
    describeLifecycle(ctx, open, options)
  })
}

const note = (keys: TestKeys, t: EventTemplate = {}) => signEvent(keys, { created_at: at(100), ...t })

function describeBasics(ctx: ContractContext): void {
  describe('storing and querying', () => {
    it('serves a saved event back with its exact raw JSON', async () => {
      const e = note(ctx.alice, { content: 'hello', tags: [['t', 'intro']] })
      expect(await ctx.save(e)).toEqual({ status: 'saved', removedIds: [] })
      const [got, ...rest] = await ctx.query([{ ids: [e.event.id] }])
      expect(rest).toEqual([])
      expect([got?.raw, got?.kind, got?.event]).toEqual([e.raw, e.event.kind, e.event])
    })

    it('serves author-only kinds only to their author or a p-tagged reader, inside the limit and the count', async () => {
      const carol = makeKeys()
      const pub = note(ctx.alice, { created_at: at(300), content: 'public' })
      const dm = note(ctx.alice, { kind: 4, created_at: at(200), tags: [['p', ctx.bob.pubkey]] })
      const wrap = note(carol, { kind: 1059, created_at: at(100), tags: [['p', ctx.bob.pubkey]] })
      for (const e of [pub, dm, wrap]) await ctx.save(e)
      const rule = (readers: string[]) => ({ now: NOW, authorOnly: { kinds: [4, 1059], readers } })
      const q = (filters: Filter[], readers: string[]) => ctx.store.query(ctx.community, filters, rule(readers))
      // the hidden newer rows must not take the places of the readable older one
      expect(idsOf(await q([{ limit: 1 }], []))).toEqual([pub.event.id])
      expect(idsOf(await q([{}], [ctx.alice.pubkey]))).toEqual([dm.event.id, pub.event.id])
      expect(idsOf(await q([{}], [ctx.bob.pubkey]))).toEqual([wrap.event.id, dm.event.id, pub.event.id])
      expect(idsOf(await q([{ kinds: [4, 1059] }], [carol.pubkey]))).toEqual([wrap.event.id])
      expect(await ctx.store.count(ctx.community, [{}], rule([]))).toBe(1)
      expect(await ctx.store.count(ctx.community, [{}], rule([ctx.bob.pubkey]))).toBe(3)
    })

    it('leaves out the channel state a rule hides (kinds with a d tag naming a channel), inside the limit and the count', async () => {
      const state = (kind: number, d: string, t: number) => note(ctx.alice, { kind, created_at: at(t), tags: [['d', d]] })
      const open = state(39002, 'lobby', 100)
      const lists = state(39002, 'vault', 300)
      const meta = state(39000, 'vault', 200)
      for (const e of [open, lists, meta]) await ctx.save(e)
      const post = note(ctx.alice, { kind: 9000, created_at: at(250), tags: [['h', 'vault']] })
      await ctx.save(post)
      const rules = [
        { tag: 'd' as const, kinds: [39001, 39002], channels: ['vault', 'den'] },
        { tag: 'h' as const, kinds: [9000], channels: ['vault'] },
      ]
      const opts = { now: NOW, hiddenChannelState: rules }
      const q = (filters: Filter[]) => ctx.store.query(ctx.community, filters, opts).then(idsOf)
      expect(await q([{ limit: 1, kinds: [39002] }])).toEqual([open.event.id])
      expect(await q([{ tags: { d: ['vault'] } }])).toEqual([meta.event.id])
      expect(await q([{ ids: [lists.event.id, post.event.id] }])).toEqual([])
      expect(await q([{ tags: { h: ['vault'] } }])).toEqual([])
      expect(await ctx.store.count(ctx.community, [{ kinds: [39000, 39002] }], opts)).toBe(2)
      expect(await ctx.store.count(ctx.community, [{ kinds: [39000, 39002] }], { now: NOW })).toBe(3)
    })

    it('answers duplicate for an id already stored in the community', async () => {
      const e = note(ctx.alice)
      await ctx.save(e)
      expect(await ctx.save(e)).toEqual({ status: 'duplicate' })
      expect(await Promise.all([ctx.save(e), ctx.save(e)])).toEqual([{ status: 'duplicate' }, { status: 'duplicate' }])
    })

    it('treats the same id twice in one batch as saved then duplicate', async () => {
      const e = note(ctx.alice)
      const outcomes = await Promise.all([ctx.save(e), ctx.save(e)])
      expect(outcomes.map((o) => o.status)).toEqual(['saved', 'duplicate'])
    })

    it('stores the same event once per community and never lets a query cross communities', async () => {
      const other = `${ctx.community}-other`
      const shared = note(ctx.alice)
      const onlyHere = note(ctx.bob)
      expect((await ctx.save(shared)).status).toBe('saved')
      expect((await ctx.save(shared, other)).status).toBe('saved')
      await ctx.save(onlyHere)
      expect(idsOf(await ctx.query([{}], other))).toEqual([shared.event.id])
      expect(await ctx.query([{ authors: [ctx.bob.pubkey] }], other)).toEqual([])
      expect(await ctx.store.count(other, [{}], { now: NOW })).toBe(1)
    })

    it('matches ids, authors, kinds, since/until and single-letter tags', async () => {
      const a = note(ctx.alice, {
        kind: 1,
        created_at: at(30),
        tags: [
          ['e', 'x'.repeat(64)],
          ['p', ctx.bob.pubkey],
        ],
      })
      const b = note(ctx.bob, {
        kind: 7,
        created_at: at(20),
        tags: [
          ['t', 'nostr'],
          ['e', 'x'.repeat(64)],
        ],
      })
      const c = note(ctx.bob, { kind: 1, created_at: at(10), tags: [['t', 'other']] })
      for (const e of [a, b, c]) await ctx.save(e)
      const ids = async (f: Filter) => idsOf(await ctx.query([f]))
      expect(await ids({ ids: [a.event.id, c.event.id] })).toEqual([c.event.id, a.event.id])
      expect(await ids({ authors: [ctx.bob.pubkey] })).toEqual([c.event.id, b.event.id])
      expect(await ids({ authors: [ctx.bob.pubkey], kinds: [7] })).toEqual([b.event.id])
      expect(await ids({ kinds: [1] })).toEqual([c.event.id, a.event.id])
      expect(await ids({ tags: { e: ['x'.repeat(64)] } })).toEqual([b.event.id, a.event.id])
      expect(await ids({ tags: { p: [ctx.bob.pubkey] } })).toEqual([a.event.id])
      expect(await ids({ kinds: [7], tags: { t: ['nostr', 'other'] } })).toEqual([b.event.id])
      expect(await ids({ since: at(20), until: at(10) })).toEqual([c.event.id, b.event.id])
      expect(await ids({ ids: [] })).toEqual([])
    })

    // 32 tag rows go in one insert on SQLite (TAG_ROWS_PER_INSERT): at it, one past it, and a long contact list
    it('indexes every tag of an event with 32, 33 or 200 tags, a repeated tag once', async () => {
      const pubkeyOf = (i: number) => i.toString(16).padStart(64, '0')
      const kinds = [3, 10_003, 1]
      const lists = [32, 33, 200].map((n, k) => {
        const tags = Array.from({ length: n }, (_, i) => ['p', pubkeyOf(1_000 * k + i)])
        return note(ctx.alice, { kind: kinds[k]!, created_at: at(10 * k), tags: [...tags, tags[n - 1]!] })
      })
      for (const e of lists) expect((await ctx.save(e)).status).toBe('saved')
      for (const [k, n] of [32, 33, 200].entries()) {
        const id = lists[k]!.event.id
        expect(idsOf(await ctx.query([{ tags: { p: [pubkeyOf(1_000 * k)] } }]))).toEqual([id])
        expect(idsOf(await ctx.query([{ tags: { p: [pubkeyOf(1_000 * k + n - 1)] }, kinds: [kinds[k]!] }]))).toEqual([id])
      }
      expect(await ctx.store.count(ctx.community, [{ tags: { p: [pubkeyOf(0), pubkeyOf(2_199)] } }], { now: NOW })).toBe(2)
    })

    it('answers filters with thousands of values', async () => {
      const e = note(ctx.alice, { tags: [['p', ctx.bob.pubkey]] })
      await ctx.save(e)
      const many = (last: string) => [...Array.from({ length: 40_000 }, (_, i) => i.toString(16).padStart(64, '0')), last]
      const filters: Filter[] = [{ ids: many(e.event.id) }, { authors: many(ctx.alice.pubkey), limit: 5 }]
      expect(idsOf(await ctx.query(filters))).toEqual([e.event.id])
      expect(idsOf(await ctx.query([{ tags: { p: many(ctx.bob.pubkey) }, kinds: [1] }]))).toEqual([e.event.id])
      expect(await ctx.store.count(ctx.community, filters, { now: NOW })).toBe(1)
    })

    it('orders newest first with ties by lowest id, and applies each filter its own limit', async () => {
      const same = [1, 2, 3].map((i) => note(ctx.alice, { created_at: at(50), content: `tie ${i}` }))
      const older = note(ctx.bob, { created_at: at(60), kind: 7 })
      const newer = note(ctx.bob, { created_at: at(40), kind: 7 })
      for (const e of [...same, older, newer]) await ctx.save(e)
      const tied = same.map((e) => e.event.id).sort()
      expect(idsOf(await ctx.query([{}]))).toEqual([newer.event.id, ...tied, older.event.id])
      expect(idsOf(await ctx.query([{ authors: [ctx.alice.pubkey], limit: 2 }]))).toEqual(tied.slice(0, 2))
      const both = await ctx.query([{ kinds: [1], limit: 1 }, { kinds: [7], limit: 1 }, { limit: 0 }])
      expect(idsOf(both)).toEqual([newer.event.id, tied[0]])
    })

    it('returns an event matching several values of one tag once, and still fills the limit', async () => {
      const both = note(ctx.alice, {
        created_at: at(10),
        tags: [
          ['t', 'a'],
          ['t', 'b'],
        ],
      })
      const onlyA = note(ctx.alice, { created_at: at(20), tags: [['t', 'a']] })
      for (const e of [both, onlyA]) await ctx.save(e)
      const got = await ctx.query([{ tags: { t: ['a', 'b'] }, limit: 2 }])
      expect(idsOf(got)).toEqual([both.event.id, onlyA.event.id])
    })

    it('never serves an event past its NIP-40 expiration, and does not count it', async () => {
      const expired = note(ctx.alice, { tags: [['expiration', String(NOW)]] })
      const live = note(ctx.alice, { tags: [['expiration', String(NOW + 60)]] })
      await ctx.save(expired)
      await ctx.save(live)
      expect(idsOf(await ctx.query([{}]))).toEqual([live.event.id])
      expect(await ctx.store.query(ctx.community, [{}], { now: NOW + 60 })).toEqual([])
      expect(await ctx.store.count(ctx.community, [{}], { now: NOW })).toBe(1)
    })

    it('counts distinct events across overlapping filters', async () => {
      const events = [1, 2, 3].map((i) =>
        note(ctx.alice, {
          content: `${i}`,
          tags: [
            ['t', 'a'],
            ['t', 'b'],
          ],
        }),
      )
      for (const e of events) await ctx.save(e)
      const filters: Filter[] = [{ tags: { t: ['a', 'b'] }, limit: 1 }, { authors: [ctx.alice.pubkey] }, { kinds: [9] }]
      expect(await ctx.store.count(ctx.community, filters, { now: NOW })).toBe(3)
      expect(await ctx.store.count(ctx.community, [{ kinds: [9] }], { now: NOW })).toBe(0)
    })

    it("counts at most each filter's limit: min(matching, limit), at the limit and past it", async () => {
      const events = [1, 2, 3, 4].map((i) =>
        note(ctx.alice, {
          created_at: at(10 * i),
          tags: [
            ['t', 'a'],
            ['t', 'b'],
          ],
        }),
      )
      for (const e of events) await ctx.save(e)
      const count = (filters: Filter[]) => ctx.store.count(ctx.community, filters, { now: NOW })
      for (const limit of [0, 1, 3, 4, 5]) {
        expect(await count([{ authors: [ctx.alice.pubkey], limit }])).toBe(Math.min(4, limit))
        // both tag values match every event: one place per event in the limit, not one per value
        expect(await count([{ tags: { t: ['a', 'b'] }, limit }])).toBe(Math.min(4, limit))
      }
    })

    it("counts the union of each filter's newest `limit` events, as REQ would return them", async () => {
      const [newest, second, third, oldest] = [1, 2, 3, 4].map((i) =>
        note(ctx.alice, {
          created_at: at(10 * i),
          tags: [
            ['t', 'a'],
            ['t', 'b'],
          ],
        }),
      )
      for (const e of [newest!, second!, third!, oldest!]) await ctx.save(e)
      const count = (filters: Filter[]) => ctx.store.count(ctx.community, filters, { now: NOW })
      // the same two newest events under both filters: two, not four
      expect(
        await count([
          { authors: [ctx.alice.pubkey], limit: 2 },
          { tags: { t: ['a', 'b'] }, limit: 2 },
        ]),
      ).toBe(2)
      // the oldest under its own filter, the two newest under the other: three
      const oldestOnly: Filter = { ids: [oldest!.event.id], limit: 1 }
      expect(await count([{ authors: [ctx.alice.pubkey], limit: 2 }, oldestOnly])).toBe(3)
      const filters: Filter[] = [{ kinds: [1], limit: 1 }, { tags: { t: ['b', 'a'] }, limit: 3 }, oldestOnly]
      expect(await count(filters)).toBe((await ctx.query(filters)).length)
      expect(await count(filters)).toBe(4)
      // a filter without a limit counts all its matches
      expect(await count([{ kinds: [1], limit: 1 }, { authors: [ctx.alice.pubkey] }])).toBe(4)
    })

    it('refuses an ephemeral kind as a programming error, not an outage', async () => {
      const e = note(ctx.alice, { kind: 20_001 })
      const attempt = (async () => ctx.save(e))()
      await expect(attempt).rejects.toThrow(/ephemeral/)
      await expect(attempt).rejects.not.toBeInstanceOf(StoreError)
    })
  })
}

function describeLifecycle(ctx: ContractContext, open: () => Promise<EventStore>, o: EventStoreContractOptions): void {
  describe('group commit and lifecycle', () => {
    it.runIf(o.transactionsOf)('resolves many concurrent saves, committed in few transactions', async () => {
      const events = Array.from({ length: 200 }, (_, i) => note(ctx.alice, { content: `burst ${i}` }))
      const before = o.transactionsOf!(ctx.store)
      const outcomes = await Promise.all(events.map((e) => ctx.save(e)))
      expect(outcomes.every((x) => x.status === 'saved')).toBe(true)
      expect(o.transactionsOf!(ctx.store) - before).toBeLessThanOrEqual(10)
      expect(await ctx.store.count(ctx.community, [{}], { now: NOW })).toBe(200)
    })

    it('commits saves still queued when close() is called before answering them', async () => {
      const events = Array.from({ length: 20 }, (_, i) => note(ctx.alice, { content: `last ${i}` }))
      const pending = events.map((e) => ctx.save(e))
      await ctx.store.close()
      expect((await Promise.all(pending)).every((x) => x.status === 'saved')).toBe(true)
    })

    it('rejects every call after close() with StoreError; ping answers false', async () => {
      expect(await ctx.store.ping()).toBe(true)
      await ctx.store.close()
      await expect(ctx.save(note(ctx.alice))).rejects.toBeInstanceOf(StoreError)
      await expect(ctx.query([{}])).rejects.toBeInstanceOf(StoreError)
      await expect(ctx.store.count(ctx.community, [{}], { now: NOW })).rejects.toBeInstanceOf(StoreError)
      await expect(ctx.store.deleteEvents(ctx.community, ['f'.repeat(64)])).rejects.toBeInstanceOf(StoreError)
      expect(await ctx.store.ping()).toBe(false)
    })

    it.runIf(o.openWithWriteFault)('rejects the whole batch of a failed transaction with StoreError and writes none of it', async () => {
      const faulty = await o.openWithWriteFault!('FAIL-THIS-WRITE')
      try {
        const good = [1, 2].map((i) => note(ctx.alice, { content: `innocent ${i}` }))
        const bad = note(ctx.alice, { content: 'FAIL-THIS-WRITE' })
        const batch = [good[0]!, bad, good[1]!].map((e) => faulty.save(ctx.community, e.event, e.raw))
        const settled = await Promise.allSettled(batch)
        for (const s of settled) {
          expect(s.status).toBe('rejected')
          const reason = (s as PromiseRejectedResult).reason
          expect(reason).toBeInstanceOf(StoreError)
          expect(reason.cause).toBeDefined()
        }
        expect(await faulty.query(ctx.community, [{}], { now: NOW })).toEqual([])
        // the failure belongs to that batch only: the next one commits
        expect((await faulty.save(ctx.community, good[0]!.event, good[0]!.raw)).status).toBe('saved')
      } finally {
        await faulty.close()
      }
    })

    it('opens again on the same backend after a close', async () => {
      const again = await open()
      expect(await again.ping()).toBe(true)
      await again.close()
    })
  })
}
