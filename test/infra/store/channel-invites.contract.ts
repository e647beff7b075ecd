import { randomUUID } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { ChannelStore, InviteInit } from '../../../src/infra/store/channel-store'
import { MAX_INVITES_PER_CHANNEL } from '../../../src/protocols/nip29-invites'
import { channelRow } from '../../support/channel-rows'

/**
 * The invite codes of the ChannelStore contract, run against every backend. `open` may be called several
 * times: each call is another node on the same backend.
 */
export function describeChannelInvitesContract(name: string, open: () => Promise<ChannelStore>): void {
  describe(`${name} channel invite codes`, () => {
    let store: ChannelStore
    const others: ChannelStore[] = []
    const another = async () => {
      const s = await open()
      others.push(s)
      return s
    }
    let community: string
    const NOW = 1_700_000_000
    const pubkey = (c: string) => c.repeat(64)
    const invite = (code: string, over: Partial<InviteInit> = {}): InviteInit => ({
      code,
      maxUses: 1,
      createdBy: pubkey('a'),
      createdAt: NOW,
      ...over,
    })
    const row = channelRow('room', { restricted: true, closed: true, createdAt: NOW })

    beforeEach(async () => {
      store = await open()
      community = `c-${randomUUID().slice(0, 8)}`
      await store.create(community, row, pubkey('a'))
    })
    afterEach(async () => {
      await Promise.all([store, ...others.splice(0)].map((s) => s.close()))
    })

    it('creates a code once per channel: the same code again is exists, in another channel it is another code', async () => {
      expect(await store.createInvite(community, 'room', invite('k1'), NOW)).toBe('created')
      expect(await (await another()).createInvite(community, 'room', invite('k1', { maxUses: 5 }), NOW)).toBe('exists')
      await store.create(community, { ...row, id: 'other' }, pubkey('a'))
      expect(await store.createInvite(community, 'other', invite('k1'), NOW)).toBe('created')
      expect(await store.createInvite(`${community}-x`, 'room', invite('k1'), NOW)).toBe('no-channel')
    })

    it('creates no code for an unknown or a deleted channel', async () => {
      expect(await store.createInvite(community, 'never', invite('k'), NOW)).toBe('no-channel')
      await store.remove(community, 'room')
      expect(await store.createInvite(community, 'room', invite('k'), NOW)).toBe('no-channel')
    })

    it('admits a single-use code once, as a plain member, and then answers used-up', async () => {
      await store.createInvite(community, 'room', invite('once'), NOW)
      expect(await store.redeemInvite(community, 'room', 'once', pubkey('b'), NOW)).toBe('joined')
      expect(await store.rolesOf(community, 'room', [pubkey('b')])).toEqual(new Map([[pubkey('b'), []]]))
      expect(await (await another()).redeemInvite(community, 'room', 'once', pubkey('c'), NOW)).toBe('used-up')
      expect(await store.rolesOf(community, 'room', [pubkey('c')])).toEqual(new Map())
    })

    it('admits a code of three uses three times', async () => {
      await store.createInvite(community, 'room', invite('three', { maxUses: 3 }), NOW)
      const answers = []
      for (const p of ['b', 'c', 'd', 'e']) answers.push(await store.redeemInvite(community, 'room', 'three', pubkey(p), NOW))
      expect(answers).toEqual(['joined', 'joined', 'joined', 'used-up'])
    })

    it('answers member for a member and takes no use', async () => {
      await store.createInvite(community, 'room', invite('once'), NOW)
      expect(await store.redeemInvite(community, 'room', 'once', pubkey('a'), NOW)).toBe('member')
      expect(await store.rolesOf(community, 'room', [pubkey('a')])).toEqual(new Map([[pubkey('a'), ['admin']]]))
      expect(await store.redeemInvite(community, 'room', 'once', pubkey('b'), NOW)).toBe('joined')
    })

    it('answers expired from the second it expires (even when used up too), and unknown for a code it never had', async () => {
      await store.createInvite(community, 'room', invite('soon', { expiresAt: NOW + 10, maxUses: 1 }), NOW)
      expect(await store.redeemInvite(community, 'room', 'soon', pubkey('b'), NOW + 9)).toBe('joined')
      expect(await store.redeemInvite(community, 'room', 'soon', pubkey('c'), NOW + 9)).toBe('used-up')
      expect(await store.redeemInvite(community, 'room', 'soon', pubkey('c'), NOW + 10)).toBe('expired')
      await store.createInvite(community, 'room', invite('later', { expiresAt: NOW + 10, maxUses: 5 }), NOW)
      expect(await store.redeemInvite(community, 'room', 'later', pubkey('c'), NOW + 10)).toBe('expired')
      expect(await store.redeemInvite(community, 'room', 'nope', pubkey('c'), NOW)).toBe('unknown')
      expect(await store.rolesOf(community, 'room', [pubkey('c')])).toEqual(new Map())
    })

    it('admits exactly one of sixteen joins racing on two nodes for a single-use code', async () => {
      const node2 = await another()
      await store.createInvite(community, 'room', invite('race'), NOW)
      const joiners = Array.from({ length: 16 }, (_, i) => (i + 1).toString(16).padStart(64, '0'))
      const answers = await Promise.all(joiners.map((p, i) => (i % 2 ? node2 : store).redeemInvite(community, 'room', 'race', p, NOW)))
      expect(answers.filter((a) => a === 'joined')).toHaveLength(1)
      expect(answers.filter((a) => a === 'used-up')).toHaveLength(15)
      const members = await store.rolesOf(community, 'room', joiners)
      expect(members.size).toBe(1)
    })

    it(`holds ${MAX_INVITES_PER_CHANNEL} codes; one more is full until a spent code can make room`, async () => {
      for (let i = 0; i < MAX_INVITES_PER_CHANNEL - 1; i++)
        expect(await store.createInvite(community, 'room', invite(`k${i}`, { maxUses: 2 }), NOW)).toBe('created')
      expect(await store.createInvite(community, 'room', invite('last', { expiresAt: NOW + 5 }), NOW)).toBe('created')
      expect(await store.createInvite(community, 'room', invite('over'), NOW)).toBe('full')
      // the last one expires: it is dropped to make room, and it is gone for good
      expect(await store.createInvite(community, 'room', invite('over'), NOW + 5)).toBe('created')
      expect(await store.redeemInvite(community, 'room', 'last', pubkey('b'), NOW + 5)).toBe('unknown')
      expect(await store.redeemInvite(community, 'room', 'k0', pubkey('b'), NOW + 5)).toBe('joined')
    })

    it('admits no code of a deleted channel', async () => {
      await store.createInvite(community, 'room', invite('gone', { maxUses: 5 }), NOW)
      expect(await store.remove(community, 'room')).toBe(true)
      expect(await store.redeemInvite(community, 'room', 'gone', pubkey('b'), NOW)).toBe('unknown')
      expect(await store.members(community, 'room')).toEqual([])
    })
  })
}
