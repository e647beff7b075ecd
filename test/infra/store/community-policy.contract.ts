import { describe, expect, it } from 'vitest'
import { type CommunityRecord, type CommunityStore, DEFAULT_SETTINGS } from '../../../src/infra/store/community-store'

/**
 * Part of the CommunityStore contract: what NIP-86 management changes (settings, kind rules, the allowed
 * pubkeys, banned events and blocked IPs). Ids and records come from the caller, which owns their prefix.
 */
export interface CommunityContractContext {
  store(): CommunityStore
  /** another node on the same backend */
  another(): Promise<CommunityStore>
  /** an id only this test uses */
  id(suffix: string): string
  /** a record with that id, its own host, the default settings and no kind rules */
  record(suffix: string): CommunityRecord
  /** the active communities this test put, as `s` lists them */
  mine(s?: CommunityStore): Promise<CommunityRecord[]>
}

const pubkey = (c: string) => c.repeat(64)
const NOW = 1_700_000_000

export function describeCommunityPolicyContract(ctx: CommunityContractContext): void {
  describeSettings(ctx)
  describeKindRules(ctx)
  describeLists(ctx)
}

function describeSettings(ctx: CommunityContractContext): void {
  const settingsOf = async (id: string, s?: CommunityStore) => (await ctx.mine(s)).find((r) => r.id === id)?.settings

  describe('settings', () => {
    it('lists the default settings and no kind rules for a community put without them', async () => {
      const { settings: _, kinds: __, ...bare } = ctx.record('a')
      await ctx.store().put(bare)
      expect(await ctx.mine()).toEqual([{ ...bare, settings: DEFAULT_SETTINGS, kinds: { allowed: [], disallowed: [] } }])
    })

    it('starts a new community with the settings put gives, over the defaults', async () => {
      const a = ctx.record('a')
      await ctx.store().put({ ...a, settings: { readPolicy: 'members', icon: 'https://x.example/i.png' } })
      expect(await settingsOf(a.id)).toEqual({ ...DEFAULT_SETTINGS, readPolicy: 'members', icon: 'https://x.example/i.png' })
    })

    it('merges updateSettings into the stored settings, keeping every other key, and renames when given a name', async () => {
      const a = ctx.record('a')
      await ctx.store().put(a)
      expect(await ctx.store().updateSettings(a.id, { writePolicy: 'authenticated', authRequired: true })).toBe(true)
      expect(await ctx.store().updateSettings(a.id, { description: 'for agents', name: 'renamed' })).toBe(true)
      const [listed] = await ctx.mine(await ctx.another())
      expect(listed?.name).toBe('renamed')
      expect(listed?.settings).toEqual({ ...DEFAULT_SETTINGS, writePolicy: 'authenticated', authRequired: true, description: 'for agents' })
      expect(await ctx.store().updateSettings(a.id, { readPolicy: 'public' })).toBe(true)
      expect((await ctx.mine())[0]?.name).toBe('renamed')
    })

    it('replaces the role domain lists whole on updateSettings (a rule removed stays removed), and keeps agent roles', async () => {
      const a = { ...ctx.record('a'), agents: [{ pubkey: pubkey('1'), tier: 'standard' as const, role: 'planner' }] }
      await ctx.store().put(a)
      const two = [
        { from: 'planner', to: ['worker'] },
        { from: 'worker', to: ['auditor', 'planner'] },
      ]
      await ctx.store().updateSettings(a.id, { roleRules: two, channelRoles: [{ channel: 'ops', roles: ['worker'] }] })
      await ctx.store().updateSettings(a.id, { roleRules: [two[1]!] })
      const [listed] = await ctx.mine(await ctx.another())
      expect(listed?.settings.roleRules).toEqual([two[1]])
      expect(listed?.settings.channelRoles).toEqual([{ channel: 'ops', roles: ['worker'] }])
      expect(listed?.agents).toEqual([{ pubkey: pubkey('1'), tier: 'standard', role: 'planner' }])
    })

    it('keeps settings an admin changed when the community is put again, with or without settings', async () => {
      const { settings: _, kinds: __, ...a } = ctx.record('a')
      await ctx.store().put(a)
      await ctx.store().updateSettings(a.id, { authRequired: true, readPolicy: 'authenticated' })
      expect(await ctx.store().put({ ...a, name: 'put again' })).toEqual({ ok: true })
      expect(await settingsOf(a.id)).toEqual({ ...DEFAULT_SETTINGS, authRequired: true, readPolicy: 'authenticated' })
      await ctx.store().put({ ...a, settings: { readPolicy: 'members' } })
      expect(await settingsOf(a.id)).toEqual({ ...DEFAULT_SETTINGS, authRequired: true, readPolicy: 'members' })
    })

    it('keeps every change when two nodes change different settings at the same moment', async () => {
      const ids = ['a', 'b', 'c', 'd', 'e'].map((suffix) => ctx.record(suffix))
      for (const r of ids) await ctx.store().put(r)
      const [s, node2] = [ctx.store(), await ctx.another()]
      const changes = ids.flatMap(({ id }) => [
        s.updateSettings(id, { description: 'by node 1' }),
        node2.updateSettings(id, { icon: 'by node 2' }),
        s.updateSettings(id, { authRequired: true }),
        node2.updateSettings(id, { readPolicy: 'members' }),
      ])
      expect(await Promise.all(changes)).toEqual(Array(changes.length).fill(true))
      const expected = { ...DEFAULT_SETTINGS, description: 'by node 1', icon: 'by node 2', authRequired: true, readPolicy: 'members' }
      expect((await ctx.mine()).map((r) => r.settings)).toEqual(ids.map(() => expected))
    })

    it('answers false to updateSettings for an unknown or archived community and changes nothing', async () => {
      const [a, b] = [ctx.record('a'), ctx.record('b')]
      await ctx.store().put(a)
      await ctx.store().put(b)
      await ctx.store().archive(b.id, NOW)
      expect(await ctx.store().updateSettings(ctx.id('unknown'), { readPolicy: 'members' })).toBe(false)
      expect(await ctx.store().updateSettings(b.id, { readPolicy: 'members', name: 'revived?' })).toBe(false)
      expect(await ctx.mine()).toEqual([a])
    })
  })
}

function describeKindRules(ctx: CommunityContractContext): void {
  describe('kind rules', () => {
    it('lists allowed and disallowed kinds ascending, the last rule for a kind replacing the earlier one', async () => {
      const [a, b] = [ctx.record('a'), ctx.record('b')]
      await ctx.store().put(a)
      await ctx.store().put(b)
      for (const [kind, rule] of [
        [7, 'disallow'],
        [30_023, 'allow'],
        [1, 'allow'],
        [4, 'disallow'],
        [7, 'allow'],
        [1, 'disallow'],
      ] as const) {
        await ctx.store().setKindRule(a.id, kind, rule)
      }
      await ctx.store().setKindRule(b.id, 9, 'allow')
      const [listedA, listedB] = await ctx.mine(await ctx.another())
      expect(listedA?.kinds).toEqual({ allowed: [7, 30_023], disallowed: [1, 4] })
      expect(listedB?.kinds).toEqual({ allowed: [9], disallowed: [] })
    })
  })
}

function describeLists(ctx: CommunityContractContext): void {
  describe('NIP-86 lists', () => {
    it('allows pubkeys in one community, with their reasons by pubkey, and answers which of some are allowed', async () => {
      const [here, there] = [ctx.id('here'), ctx.id('there')]
      const s = ctx.store()
      await s.allowPubkey(here, pubkey('b'), 'agent')
      await s.allowPubkey(here, pubkey('a'), 'first')
      await s.allowPubkey(here, pubkey('a'), 'member')
      await s.allowPubkey(there, pubkey('c'), 'elsewhere')
      const node2 = await ctx.another()
      expect(await node2.listAllowedPubkeys(here)).toEqual([
        { value: pubkey('a'), reason: 'member' },
        { value: pubkey('b'), reason: 'agent' },
      ])
      expect(await node2.allowedAmong(here, [pubkey('c'), pubkey('a'), pubkey('d'), pubkey('b')])).toEqual(
        new Set([pubkey('a'), pubkey('b')]),
      )
      expect(await s.allowedAmong(here, [])).toEqual(new Set())
      expect(await s.disallowPubkey(here, pubkey('a'))).toBe(true)
      expect(await s.disallowPubkey(here, pubkey('a'))).toBe(false)
      expect(await s.disallowPubkey(here, pubkey('c'))).toBe(false)
      expect(await s.allowedAmong(here, [pubkey('a'), pubkey('b')])).toEqual(new Set([pubkey('b')]))
      expect(await s.listAllowedPubkeys(there)).toEqual([{ value: pubkey('c'), reason: 'elsewhere' }])
    })

    it('bans an event id in one community until allowed again', async () => {
      const [here, there] = [ctx.id('here'), ctx.id('there')]
      const s = ctx.store()
      await s.banEvent(here, pubkey('e'), 'spam')
      await s.banEvent(here, pubkey('d'), 'first')
      await s.banEvent(here, pubkey('d'), 'abuse')
      const node2 = await ctx.another()
      expect(await node2.isEventBanned(here, pubkey('e'))).toBe(true)
      expect(await node2.isEventBanned(there, pubkey('e'))).toBe(false)
      expect(await node2.listBannedEvents(here)).toEqual([
        { value: pubkey('d'), reason: 'abuse' },
        { value: pubkey('e'), reason: 'spam' },
      ])
      expect(await s.allowEvent(here, pubkey('e'))).toBe(true)
      expect(await s.allowEvent(here, pubkey('e'))).toBe(false)
      expect(await node2.isEventBanned(here, pubkey('e'))).toBe(false)
      expect(await s.listBannedEvents(there)).toEqual([])
    })

    it('blocks an IP in one community until unblocked', async () => {
      const [here, there] = [ctx.id('here'), ctx.id('there')]
      const s = ctx.store()
      await s.blockIp(here, '203.0.113.7', 'flood')
      await s.blockIp(here, '2001:db8::1', 'scraper')
      const node2 = await ctx.another()
      expect(await node2.listBlockedIps(here)).toEqual([
        { value: '2001:db8::1', reason: 'scraper' },
        { value: '203.0.113.7', reason: 'flood' },
      ])
      expect(await node2.listBlockedIps(there)).toEqual([])
      expect(await s.unblockIp(here, '203.0.113.7')).toBe(true)
      expect(await s.unblockIp(here, '203.0.113.7')).toBe(false)
      expect(await node2.listBlockedIps(here)).toEqual([{ value: '2001:db8::1', reason: 'scraper' }])
    })
  })
}
