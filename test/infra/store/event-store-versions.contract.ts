import { describe, expect, it } from 'vitest'
import { type EventTemplate, signEvent, type TestKeys } from '../../support/events'
import { at, type ContractContext, idsOf } from './contract-context'

/** Part of the EventStore contract: which version of an event is kept (NIP-01 replaceable, NIP-09). */

const make = (keys: TestKeys, t: EventTemplate) => signEvent(keys, { created_at: at(100), ...t })
const PROFILE = 0
const ARTICLE = 30_023

export function describeReplaceableContract(ctx: ContractContext): void {
  describe('replaceable and addressable events (latest wins)', () => {
    it('replaces an older version with a newer one and reports the removed id', async () => {
      const v1 = make(ctx.alice, { kind: PROFILE, created_at: at(20), content: 'v1' })
      const v2 = make(ctx.alice, { kind: PROFILE, created_at: at(10), content: 'v2' })
      await ctx.save(v1)
      expect(await ctx.save(v2)).toEqual({ status: 'saved', removedIds: [v1.event.id] })
      expect(idsOf(await ctx.query([{ kinds: [PROFILE] }]))).toEqual([v2.event.id])
    })

    it('answers superseded for an older version arriving after a newer one', async () => {
      const v1 = make(ctx.alice, { kind: 10_002, created_at: at(20) })
      const v2 = make(ctx.alice, { kind: 10_002, created_at: at(10) })
      await ctx.save(v2)
      expect(await ctx.save(v1)).toEqual({ status: 'superseded' })
      expect(idsOf(await ctx.query([{ authors: [ctx.alice.pubkey] }]))).toEqual([v2.event.id])
    })

    it('keeps the lower id when two versions share created_at, whichever arrives first', async () => {
      const [low, high] = [1, 2]
        .map((i) => make(ctx.alice, { kind: 3, created_at: at(10), content: `tie ${i}` }))
        .sort((a, b) => (a.event.id < b.event.id ? -1 : 1))
      await ctx.save(high!)
      expect(await ctx.save(low!)).toEqual({ status: 'saved', removedIds: [high!.event.id] })
      expect(await ctx.save(high!)).toEqual({ status: 'superseded' })
      expect(idsOf(await ctx.query([{ kinds: [3] }]))).toEqual([low!.event.id])
    })

    it('keeps only the newest when several versions arrive in one batch, in any order', async () => {
      const versions = [30, 10, 20].map((ago) => make(ctx.alice, { kind: PROFILE, created_at: at(ago) }))
      const outcomes = await Promise.all(versions.map((v) => ctx.save(v)))
      expect(outcomes.map((o) => o.status)).toEqual(['saved', 'saved', 'superseded'])
      expect(idsOf(await ctx.query([{ kinds: [PROFILE] }]))).toEqual([versions[1]!.event.id])
    })

    it('keeps one version per author: another author never replaces it', async () => {
      await ctx.save(make(ctx.alice, { kind: PROFILE, created_at: at(20) }))
      await ctx.save(make(ctx.bob, { kind: PROFILE, created_at: at(10) }))
      expect(await ctx.query([{ kinds: [PROFILE] }])).toHaveLength(2)
    })

    it('keys addressable events by d: other d values coexist, the same d is replaced', async () => {
      const a1 = make(ctx.alice, { kind: ARTICLE, created_at: at(30), tags: [['d', 'a']] })
      const b1 = make(ctx.alice, { kind: ARTICLE, created_at: at(20), tags: [['d', 'b']] })
      const a2 = make(ctx.alice, { kind: ARTICLE, created_at: at(10), tags: [['d', 'a']] })
      for (const e of [a1, b1]) await ctx.save(e)
      expect(await ctx.save(a2)).toEqual({ status: 'saved', removedIds: [a1.event.id] })
      expect(idsOf(await ctx.query([{ kinds: [ARTICLE] }]))).toEqual([a2.event.id, b1.event.id])
      expect(idsOf(await ctx.query([{ tags: { d: ['a'] } }]))).toEqual([a2.event.id])
    })

    it('treats a missing d tag as the address with d ""', async () => {
      const bare = make(ctx.alice, { kind: ARTICLE, created_at: at(20) })
      const empty = make(ctx.alice, { kind: ARTICLE, created_at: at(10), tags: [['d', '']] })
      await ctx.save(bare)
      expect(await ctx.save(empty)).toEqual({ status: 'saved', removedIds: [bare.event.id] })
    })
  })
}

const deletion = (keys: TestKeys, tags: string[][], ago = 50) => make(keys, { kind: 5, created_at: at(ago), tags })

export function describeDeletionContract(ctx: ContractContext): void {
  describe('NIP-09 deletion', () => {
    it("deletes the author's own event named by an e tag and stores the deletion itself", async () => {
      const target = make(ctx.alice, { content: 'oops' })
      await ctx.save(target)
      const del = deletion(ctx.alice, [['e', target.event.id]])
      expect(await ctx.save(del)).toEqual({ status: 'saved', removedIds: [target.event.id] })
      expect(idsOf(await ctx.query([{}]))).toEqual([del.event.id])
    })

    it("ignores a deletion naming someone else's event, now and on its later arrival", async () => {
      const stored = make(ctx.alice, { content: 'mine' })
      const later = make(ctx.alice, { content: 'mine, later' })
      await ctx.save(stored)
      const del = deletion(ctx.bob, [
        ['e', stored.event.id],
        ['e', later.event.id],
      ])
      expect(await ctx.save(del)).toEqual({ status: 'saved', removedIds: [] })
      expect((await ctx.save(later)).status).toBe('saved')
      expect(await ctx.query([{ authors: [ctx.alice.pubkey] }])).toHaveLength(2)
    })

    it('answers deleted for an event whose deletion arrived first, and for a re-sent deleted event', async () => {
      const first = make(ctx.alice, { content: 'deleted before arrival' })
      const second = make(ctx.alice, { content: 'deleted after arrival' })
      await ctx.save(second)
      await ctx.save(
        deletion(ctx.alice, [
          ['e', first.event.id],
          ['e', second.event.id],
        ]),
      )
      expect(await ctx.save(first)).toEqual({ status: 'deleted' })
      expect(await ctx.save(second)).toEqual({ status: 'deleted' })
      expect(await ctx.query([{ kinds: [1] }])).toEqual([])
    })

    it("deletes by a tag only the versions up to the deletion's created_at", async () => {
      const address = `${ARTICLE}:${ctx.alice.pubkey}:post`
      const old = make(ctx.alice, { kind: ARTICLE, created_at: at(60), tags: [['d', 'post']] })
      const del = deletion(ctx.alice, [['a', address]], 50)
      const older = make(ctx.alice, { kind: ARTICLE, created_at: at(55), tags: [['d', 'post']] })
      const newer = make(ctx.alice, { kind: ARTICLE, created_at: at(40), tags: [['d', 'post']] })
      await ctx.save(old)
      expect(await ctx.save(del)).toEqual({ status: 'saved', removedIds: [old.event.id] })
      expect(await ctx.save(older)).toEqual({ status: 'deleted' })
      expect((await ctx.save(newer)).status).toBe('saved')
      expect(idsOf(await ctx.query([{ kinds: [ARTICLE] }]))).toEqual([newer.event.id])
    })

    it('spares by a tag a version newer than the deletion', async () => {
      const newer = make(ctx.alice, { kind: ARTICLE, created_at: at(40), tags: [['d', 'post']] })
      await ctx.save(newer)
      const del = deletion(ctx.alice, [['a', `${ARTICLE}:${ctx.alice.pubkey}:post`]], 50)
      expect(await ctx.save(del)).toEqual({ status: 'saved', removedIds: [] })
      expect(idsOf(await ctx.query([{ kinds: [ARTICLE] }]))).toEqual([newer.event.id])
    })

    it("ignores an a tag naming another author's address", async () => {
      const bobs = make(ctx.bob, { kind: ARTICLE, created_at: at(60), tags: [['d', 'x']] })
      await ctx.save(bobs)
      await ctx.save(deletion(ctx.alice, [['a', `${ARTICLE}:${ctx.bob.pubkey}:x`]]))
      expect(idsOf(await ctx.query([{ kinds: [ARTICLE] }]))).toEqual([bobs.event.id])
    })

    it('never deletes a deletion (NIP-09: deleting a deletion has no effect), stored or arriving later', async () => {
      const target = make(ctx.alice, {})
      const del1 = deletion(ctx.alice, [['e', target.event.id]], 60)
      const del2 = deletion(ctx.alice, [['e', del1.event.id]], 40)
      const del3 = deletion(ctx.alice, [['e', del2.event.id]], 30)
      await ctx.save(target)
      await ctx.save(del2)
      expect((await ctx.save(del1)).status).toBe('saved')
      expect(await ctx.save(del3)).toEqual({ status: 'saved', removedIds: [] })
      expect(idsOf(await ctx.query([{ kinds: [5] }]))).toEqual([del3.event.id, del2.event.id, del1.event.id])
      expect(await ctx.query([{ kinds: [1] }])).toEqual([])
    })

    it('applies a deletion and its target in one batch in arrival order', async () => {
      const before = make(ctx.alice, { content: 'target first' })
      const after = make(ctx.alice, { content: 'deletion first' })
      const delBefore = deletion(ctx.alice, [['e', before.event.id]])
      const delAfter = deletion(ctx.alice, [['e', after.event.id]], 51)
      const outcomes = await Promise.all([before, delBefore, delAfter, after].map((e) => ctx.save(e)))
      expect(outcomes).toEqual([
        { status: 'saved', removedIds: [] },
        { status: 'saved', removedIds: [before.event.id] },
        { status: 'saved', removedIds: [] },
        { status: 'deleted' },
      ])
      expect(await ctx.query([{ kinds: [1] }])).toEqual([])
    })
  })
}
