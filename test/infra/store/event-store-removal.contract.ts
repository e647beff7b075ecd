import { describe, expect, it } from 'vitest'
import { type EventTemplate, signEvent, type TestKeys } from '../../support/events'
import { at, type ContractContext, idsOf, NOW } from './contract-context'

/** Part of the EventStore contract: removing events outright (NIP-86 banevent, a moderator's delete). */

const make = (keys: TestKeys, t: EventTemplate = {}) => signEvent(keys, { created_at: at(100), ...t })
const unknownId = 'f'.repeat(64)

export function describeRemovalContract(ctx: ContractContext): void {
  describe('removing events outright (deleteEvents)', () => {
    it('removes the stored events of any author and kind, answering the ids it removed in the order asked', async () => {
      const note = make(ctx.alice, { created_at: at(30), tags: [['t', 'gone']] })
      const reaction = make(ctx.bob, { kind: 7, created_at: at(20), tags: [['e', unknownId]] })
      const deletion = make(ctx.bob, { kind: 5, created_at: at(15), tags: [['e', unknownId]] })
      const kept = make(ctx.bob, { created_at: at(10), tags: [['t', 'kept']] })
      for (const e of [note, reaction, deletion, kept]) await ctx.save(e)
      const asked = [reaction.event.id, unknownId, deletion.event.id, note.event.id, reaction.event.id]
      expect(await ctx.store.deleteEvents(ctx.community, asked)).toEqual([reaction.event.id, deletion.event.id, note.event.id])
      expect(idsOf(await ctx.query([{}]))).toEqual([kept.event.id])
      expect(await ctx.store.count(ctx.community, [{}, { tags: { t: ['gone'] } }], { now: NOW })).toBe(1)
    })

    it('finds a removed event by none of its tags, while other events keep theirs', async () => {
      const gone = make(ctx.alice, {
        created_at: at(20),
        tags: [
          ['t', 'shared'],
          ['p', ctx.bob.pubkey],
        ],
      })
      const kept = make(ctx.alice, { created_at: at(10), tags: [['t', 'shared']] })
      await ctx.save(gone)
      await ctx.save(kept)
      await ctx.store.deleteEvents(ctx.community, [gone.event.id])
      expect(idsOf(await ctx.query([{ tags: { t: ['shared'] } }]))).toEqual([kept.event.id])
      expect(await ctx.query([{ tags: { p: [ctx.bob.pubkey] } }])).toEqual([])
      expect(await ctx.query([{ kinds: [1], tags: { t: ['shared'] }, limit: 5 }])).toHaveLength(1)
    })

    it('answers [] for unknown ids and for none, and changes nothing', async () => {
      const e = make(ctx.alice)
      await ctx.save(e)
      expect(await ctx.store.deleteEvents(ctx.community, [unknownId])).toEqual([])
      expect(await ctx.store.deleteEvents(ctx.community, [])).toEqual([])
      expect(idsOf(await ctx.query([{}]))).toEqual([e.event.id])
    })

    it('leaves the same event in another community untouched', async () => {
      const other = `${ctx.community}-other`
      const shared = make(ctx.alice, { tags: [['t', 'both']] })
      await ctx.save(shared)
      await ctx.save(shared, other)
      expect(await ctx.store.deleteEvents(other, [shared.event.id])).toEqual([shared.event.id])
      expect(await ctx.query([{}], other)).toEqual([])
      expect(idsOf(await ctx.query([{ tags: { t: ['both'] } }]))).toEqual([shared.event.id])
    })

    it('leaves no tombstone: the store takes a removed event again (refusing it is a ban, not the store)', async () => {
      const e = make(ctx.alice)
      await ctx.save(e)
      await ctx.store.deleteEvents(ctx.community, [e.event.id])
      expect(await ctx.save(e)).toEqual({ status: 'saved', removedIds: [] })
    })

    it('empties an address when its stored version is removed, so an older version may be saved again', async () => {
      const older = make(ctx.alice, { kind: 30_023, created_at: at(20), tags: [['d', 'post']] })
      const newer = make(ctx.alice, { kind: 30_023, created_at: at(10), tags: [['d', 'post']] })
      await ctx.save(older)
      await ctx.save(newer)
      expect(await ctx.store.deleteEvents(ctx.community, [newer.event.id])).toEqual([newer.event.id])
      expect(await ctx.query([{ kinds: [30_023] }])).toEqual([])
      expect(await ctx.save(older)).toEqual({ status: 'saved', removedIds: [] })
      expect(await ctx.save(newer)).toEqual({ status: 'saved', removedIds: [older.event.id] })
      expect(idsOf(await ctx.query([{ kinds: [30_023] }]))).toEqual([newer.event.id])
    })
  })
}
