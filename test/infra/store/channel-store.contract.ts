import { randomUUID } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { ChannelInit, ChannelStore } from '../../../src/infra/store/channel-store'
import { channelRow } from '../../support/channel-rows'

/**
 * The ChannelStore contract, run against every backend. `open` may be called several times: each call is
 * another node on the same backend. Each test owns its community ids, so tests never see each other's rows.
 */
export function describeChannelStoreContract(name: string, open: () => Promise<ChannelStore>): void {
  describe(`${name} channel store`, () => {
    let store: ChannelStore
    const others: ChannelStore[] = []
    const another = async () => {
      const s = await open()
      others.push(s)
      return s
    }
    let community: string
    const pubkey = (c: string) => c.repeat(64)
    const channel = (id: string, over: Partial<ChannelInit> = {}): ChannelInit =>
      channelRow(id, { name: `channel ${id}`, createdAt: 1_700_000_000, ...over })

    beforeEach(async () => {
      store = await open()
      community = `c-${randomUUID().slice(0, 8)}`
    })
    afterEach(async () => {
      await Promise.all([store, ...others.splice(0)].map((s) => s.close()))
    })

    describe('channels', () => {
      it('creates a channel with its creator as admin, shown to every node', async () => {
        const c = channel('general', { about: 'all', picture: 'https://x.example/p.png', private: true, closed: true })
        expect(await store.create(community, c, pubkey('a'))).toBe('created')
        const node2 = await another()
        expect(await node2.get(community, ['general'])).toEqual(new Map([['general', { ...c, deleted: false }]]))
        expect(await node2.members(community, 'general')).toEqual([{ pubkey: pubkey('a'), roles: ['admin'] }])
      })

      it('answers exists for an id in use and keeps the first channel and its admin', async () => {
        const first = channel('dup', { name: 'first' })
        await store.create(community, first, pubkey('a'))
        expect(await store.create(community, channel('dup', { name: 'second' }), pubkey('b'))).toBe('exists')
        expect((await store.get(community, ['dup'])).get('dup')?.name).toBe('first')
        expect(await store.members(community, 'dup')).toEqual([{ pubkey: pubkey('a'), roles: ['admin'] }])
      })

      it('creates a channel exactly once when two nodes create the same id at once', async () => {
        const node2 = await another()
        const ids = ['r1', 'r2', 'r3', 'r4', 'r5']
        const outcomes = await Promise.all(
          ids.flatMap((id) => [store.create(community, channel(id), pubkey('a')), node2.create(community, channel(id), pubkey('b'))]),
        )
        expect(outcomes.filter((o) => o === 'created')).toHaveLength(ids.length)
        for (const id of ids) expect(await store.members(community, id)).toHaveLength(1)
      })

      it('never hands out the id of a deleted channel again', async () => {
        await store.create(community, channel('old'), pubkey('a'))
        expect(await store.remove(community, 'old')).toBe(true)
        expect(await store.create(community, channel('old'), pubkey('b'))).toBe('exists')
        expect(await store.members(community, 'old')).toEqual([])
      })

      it('gets the channels that exist among some ids, deleted ones flagged, unknown ones absent', async () => {
        await store.create(community, channel('live'), pubkey('a'))
        await store.create(community, channel('gone'), pubkey('a'))
        await store.remove(community, 'gone')
        const got = await store.get(community, ['live', 'gone', 'never'])
        expect([...got.keys()].sort()).toEqual(['gone', 'live'])
        expect(got.get('live')?.deleted).toBe(false)
        expect(got.get('gone')?.deleted).toBe(true)
        expect(await store.get(community, [])).toEqual(new Map())
      })

      it('lists the channels not deleted by id, and as restricted the private, the hidden and the deleted ones', async () => {
        for (const [id, isPrivate, hidden] of [
          ['b', true, false],
          ['a', false, false],
          ['d', false, false],
          ['c', false, false],
          ['e', false, true],
        ] as const) {
          await store.create(community, channel(id, { private: isPrivate, hidden }), pubkey('a'))
        }
        await store.remove(community, 'c')
        expect((await store.list(community)).map((c) => c.id)).toEqual(['a', 'b', 'd', 'e'])
        expect((await store.restricted(community)).map((c) => [c.id, c.private, c.hidden, c.deleted])).toEqual([
          ['b', true, false, false],
          ['c', false, false, true],
          ['e', false, true, false],
        ])
      })

      it('changes only the fields a patch gives and answers the updated record', async () => {
        const c = channel('edit', { about: 'before', private: true })
        await store.create(community, c, pubkey('a'))
        const updated = { ...c, name: 'renamed', private: false, closed: true, deleted: false }
        expect(await store.update(community, 'edit', { name: 'renamed', private: false, closed: true })).toEqual(updated)
        expect(await store.update(community, 'edit', {})).toEqual(updated)
        expect((await (await another()).get(community, ['edit'])).get('edit')).toEqual(updated)
        const hidden = { ...updated, hidden: true }
        expect(await store.update(community, 'edit', { hidden: true })).toEqual(hidden)
        expect(await store.update(community, 'edit', { name: 'renamed' })).toEqual(hidden)
        expect(await store.update(community, 'edit', { hidden: false })).toEqual(updated)
      })

      it('keeps restricted, banner and supported kinds, and patches them: a list, none at all, or every kind again', async () => {
        const c = channel('kinds', { restricted: true, banner: 'https://x.example/b.png', supportedKinds: [9, 11] })
        await store.create(community, c, pubkey('a'))
        const node2 = await another()
        expect((await node2.get(community, ['kinds'])).get('kinds')).toEqual({ ...c, deleted: false })
        expect(await store.update(community, 'kinds', { name: 'renamed' })).toMatchObject({ supportedKinds: [9, 11], restricted: true })
        expect(await store.update(community, 'kinds', { supportedKinds: [] })).toMatchObject({ supportedKinds: [] })
        expect(await store.update(community, 'kinds', { restricted: false, banner: '' })).toMatchObject({
          restricted: false,
          banner: '',
          supportedKinds: [],
        })
        expect(await store.update(community, 'kinds', { supportedKinds: null })).toMatchObject({ supportedKinds: null })
        expect((await node2.get(community, ['kinds'])).get('kinds')).toMatchObject({ supportedKinds: null, restricted: false })
        expect(await store.update(community, 'kinds', { supportedKinds: [30_023] })).toMatchObject({ supportedKinds: [30_023] })
      })

      it('keeps ids of any characters apart, case and punctuation included', async () => {
        const ids = ['aB3xY9kLm2Qp', 'ab3xy9klm2qp', 'a:b', 'a%3ab', '🐝', "x'); --"]
        for (const id of ids) expect(await store.create(community, channel(id, { name: id }), pubkey('a'))).toBe('created')
        const got = await store.get(community, ids)
        expect(ids.map((id) => got.get(id)?.name)).toEqual(ids)
        await store.putMember(community, 'a:b', pubkey('b'), [])
        expect(await store.memberChannels(community, [pubkey('b')])).toEqual(new Set(['a:b']))
      })

      it('updates neither an unknown nor a deleted channel', async () => {
        await store.create(community, channel('gone'), pubkey('a'))
        await store.remove(community, 'gone')
        expect(await store.update(community, 'gone', { name: 'back' })).toBeUndefined()
        expect(await store.update(community, 'never', { name: 'new' })).toBeUndefined()
        expect((await store.get(community, ['gone', 'never'])).get('gone')?.name).toBe('channel gone')
      })

      it('removes a channel once: its members go, later removes answer false, unknown ids too', async () => {
        await store.create(community, channel('x'), pubkey('a'))
        await store.putMember(community, 'x', pubkey('b'), [])
        expect(await store.remove(community, 'x')).toBe(true)
        expect(await store.remove(community, 'x')).toBe(false)
        expect(await store.remove(community, 'never')).toBe(false)
        expect(await store.members(community, 'x')).toEqual([])
        expect(await store.rolesOf(community, 'x', [pubkey('a'), pubkey('b')])).toEqual(new Map())
      })
    })

    describe('members', () => {
      beforeEach(async () => {
        await store.create(community, channel('room'), pubkey('a'))
      })

      it('answers added, then updated for a new role, then unchanged for the same role', async () => {
        expect(await store.putMember(community, 'room', pubkey('b'), [])).toBe('added')
        expect(await store.putMember(community, 'room', pubkey('b'), ['admin'])).toBe('updated')
        expect(await store.putMember(community, 'room', pubkey('b'), ['admin'])).toBe('unchanged')
        expect(await store.putMember(community, 'room', pubkey('a'), [])).toBe('updated')
        expect(await store.rolesOf(community, 'room', [pubkey('a'), pubkey('b')])).toEqual(
          new Map([
            [pubkey('a'), []],
            [pubkey('b'), ['admin']],
          ]),
        )
      })

      it('writes no member into an unknown or deleted channel', async () => {
        await store.create(community, channel('gone'), pubkey('a'))
        await store.remove(community, 'gone')
        expect(await store.putMember(community, 'gone', pubkey('b'), [])).toBe('unchanged')
        expect(await store.putMember(community, 'never', pubkey('b'), [])).toBe('unchanged')
        expect(await store.members(community, 'gone')).toEqual([])
        expect(await store.members(community, 'never')).toEqual([])
      })

      it('removes a member once, answering false for a pubkey that is not one', async () => {
        await store.putMember(community, 'room', pubkey('b'), [])
        expect(await store.removeMember(community, 'room', pubkey('b'))).toBe(true)
        expect(await store.removeMember(community, 'room', pubkey('b'))).toBe(false)
        expect(await store.removeMember(community, 'room', pubkey('c'))).toBe(false)
        expect(await store.members(community, 'room')).toEqual([{ pubkey: pubkey('a'), roles: ['admin'] }])
      })

      it('answers the roles of the members among some pubkeys, leaving non-members out', async () => {
        await store.putMember(community, 'room', pubkey('c'), [])
        const roles = await store.rolesOf(community, 'room', [pubkey('d'), pubkey('c'), pubkey('a')])
        expect(roles).toEqual(
          new Map([
            [pubkey('c'), []],
            [pubkey('a'), ['admin']],
          ]),
        )
        expect(await store.rolesOf(community, 'room', [])).toEqual(new Map())
      })

      it('names the channels any of some pubkeys is a member of, in this community only', async () => {
        await store.create(community, channel('second'), pubkey('b'))
        await store.putMember(community, 'second', pubkey('c'), [])
        await store.create(`${community}-other`, channel('elsewhere'), pubkey('c'))
        expect(await store.memberChannels(community, [pubkey('c')])).toEqual(new Set(['second']))
        expect(await store.memberChannels(community, [pubkey('a'), pubkey('c')])).toEqual(new Set(['room', 'second']))
        expect(await store.memberChannels(community, [pubkey('d')])).toEqual(new Set())
        expect(await store.memberChannels(community, [])).toEqual(new Set())
      })

      it('lists admins first, then moderators, then everyone else, each by pubkey', async () => {
        for (const [p, roles] of [
          ['e', []],
          ['1', ['admin']],
          ['c', ['gardener']],
          ['b', ['gardener', 'moderator']],
          ['f', ['moderator', 'admin']],
        ] as const) {
          await store.putMember(community, 'room', pubkey(p), roles)
        }
        expect(await store.members(community, 'room')).toEqual([
          { pubkey: pubkey('1'), roles: ['admin'] },
          { pubkey: pubkey('a'), roles: ['admin'] },
          { pubkey: pubkey('f'), roles: ['moderator', 'admin'] },
          { pubkey: pubkey('b'), roles: ['gardener', 'moderator'] },
          { pubkey: pubkey('c'), roles: ['gardener'] },
          { pubkey: pubkey('e'), roles: [] },
        ])
      })

      it('keeps every role a put gives, in its order, and replaces them all on the next put, on every node', async () => {
        const roles = ['moderator', 'gardener', 'ceo', 'r4', 'r5', 'r6', 'r7', 'r8']
        expect(await store.putMember(community, 'room', pubkey('b'), roles)).toBe('added')
        const node2 = await another()
        expect(await node2.rolesOf(community, 'room', [pubkey('b')])).toEqual(new Map([[pubkey('b'), roles]]))
        expect(await node2.putMember(community, 'room', pubkey('b'), ['gardener', 'moderator'])).toBe('updated')
        expect(await store.putMember(community, 'room', pubkey('b'), ['gardener', 'moderator'])).toBe('unchanged')
        expect(await store.putMember(community, 'room', pubkey('b'), ['moderator', 'gardener'])).toBe('updated')
        expect(await store.members(community, 'room')).toContainEqual({ pubkey: pubkey('b'), roles: ['moderator', 'gardener'] })
        expect(await store.putMember(community, 'room', pubkey('b'), [])).toBe('updated')
        expect(await store.rolesOf(community, 'room', [pubkey('b')])).toEqual(new Map([[pubkey('b'), []]]))
      })

      it('leaves no member in a channel removed on one node while another node adds one', async () => {
        const node2 = await another()
        const ids = Array.from({ length: 32 }, (_, i) => `race-${i}`)
        for (const id of ids) await store.create(community, channel(id), pubkey('a'))
        await Promise.all(ids.flatMap((id) => [store.remove(community, id), node2.putMember(community, id, pubkey('b'), [])]))
        for (const id of ids) expect(await node2.members(community, id)).toEqual([])
      })
    })

    describe('mesh session fence', () => {
      const owner = (c: string) => c.repeat(64)
      const fence = (generation: number, who = owner('1')) => ({ community, session: 'channel:fenced', generation, owner: who })

      it('writes under a generation, records it, and lets the same owner write again at it', async () => {
        expect(await store.storedGeneration(community, 'channel:fenced')).toBe(0)
        expect(await store.fencedWrites(fence(3)).create(community, channel('fenced'), pubkey('a'))).toBe('created')
        expect(await store.fencedWrites(fence(3)).putMember(community, 'fenced', pubkey('b'), [])).toBe('added')
        expect(await (await another()).storedGeneration(community, 'channel:fenced')).toBe(3)
      })

      it('refuses every write of a stale generation once a newer one wrote, and changes nothing', async () => {
        await store.fencedWrites(fence(1)).create(community, channel('fenced'), pubkey('a'))
        const newer = await another()
        await newer.fencedWrites(fence(2, owner('2'))).putMember(community, 'fenced', pubkey('b'), [])
        const stale = store.fencedWrites(fence(1))
        await expect(stale.putMember(community, 'fenced', pubkey('c'), [])).rejects.toMatchObject({ code: 'APIARY_MESH_FENCED' })
        await expect(stale.removeMember(community, 'fenced', pubkey('b'))).rejects.toMatchObject({ code: 'APIARY_MESH_FENCED' })
        await expect(stale.update(community, 'fenced', { name: 'stale' })).rejects.toMatchObject({ code: 'APIARY_MESH_FENCED' })
        await expect(stale.remove(community, 'fenced')).rejects.toMatchObject({ code: 'APIARY_MESH_FENCED' })
        await expect(stale.create(community, channel('other'), pubkey('a'))).rejects.toMatchObject({ code: 'APIARY_MESH_FENCED' })
        const invite = { code: 'stale', maxUses: 1, createdBy: pubkey('a'), createdAt: 1 }
        await expect(stale.createInvite(community, 'fenced', invite, 1)).rejects.toMatchObject({ code: 'APIARY_MESH_FENCED' })
        expect(await newer.fencedWrites(fence(2, owner('2'))).createInvite(community, 'fenced', invite, 1)).toBe('created')
        await expect(stale.redeemInvite(community, 'fenced', 'stale', pubkey('c'), 1)).rejects.toMatchObject({
          code: 'APIARY_MESH_FENCED',
        })
        expect((await store.members(community, 'fenced')).map((m) => m.pubkey)).toEqual([pubkey('a'), pubkey('b')])
        expect((await store.get(community, ['fenced', 'other'])).get('fenced')?.name).toBe('channel fenced')
        expect((await store.get(community, ['other'])).size).toBe(0)
        expect(await store.storedGeneration(community, 'channel:fenced')).toBe(2)
      })

      it('refuses a second owner writing under the same generation', async () => {
        await store.fencedWrites(fence(5, owner('1'))).create(community, channel('fenced'), pubkey('a'))
        const rival = store.fencedWrites(fence(5, owner('2')))
        await expect(rival.putMember(community, 'fenced', pubkey('c'), [])).rejects.toMatchObject({ code: 'APIARY_MESH_FENCED' })
        expect(await store.rolesOf(community, 'fenced', [pubkey('c')])).toEqual(new Map())
      })

      it('keeps sessions and communities apart', async () => {
        await store.fencedWrites(fence(9)).create(community, channel('fenced'), pubkey('a'))
        const elsewhere = { ...fence(1), session: 'channel:other' }
        expect(await store.fencedWrites(elsewhere).create(community, channel('other'), pubkey('a'))).toBe('created')
        const otherCommunity = { ...fence(1), community: `${community}-x` }
        expect(await store.fencedWrites(otherCommunity).create(otherCommunity.community, channel('fenced'), pubkey('a'))).toBe('created')
      })
    })

    describe('isolation', () => {
      it('keeps the same channel id in two communities apart: records, members and removal', async () => {
        const other = `${community}-other`
        await store.create(community, channel('shared', { name: 'here' }), pubkey('a'))
        expect(await store.create(other, channel('shared', { name: 'there' }), pubkey('b'))).toBe('created')
        await store.putMember(community, 'shared', pubkey('c'), [])
        await store.update(other, 'shared', { about: 'only there' })
        expect(await store.remove(community, 'shared')).toBe(true)
        const there = (await store.get(other, ['shared'])).get('shared')
        expect([there?.name, there?.about, there?.deleted]).toEqual(['there', 'only there', false])
        expect(await store.members(other, 'shared')).toEqual([{ pubkey: pubkey('b'), roles: ['admin'] }])
        expect(await store.rolesOf(other, 'shared', [pubkey('a'), pubkey('c')])).toEqual(new Map())
        expect((await store.list(other)).map((c) => c.name)).toEqual(['there'])
        expect(await store.list(community)).toEqual([])
      })
    })
  })
}
