import { randomUUID } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type CommunityRecord, type CommunityStore, DEFAULT_SETTINGS } from '../../../src/infra/store/community-store'
import { describeCommunityPolicyContract } from './community-policy.contract'

/**
 * The CommunityStore contract, run against every backend. `open` may be called several times: each call is
 * another node on the same backend. Tests share that backend, so each owns its ids, hosts and pubkeys and
 * reads back only its own rows.
 */
export function describeCommunityStoreContract(name: string, open: () => Promise<CommunityStore>): void {
  describe(`${name} community store`, () => {
    let store: CommunityStore
    const others: CommunityStore[] = []
    // another node on the same backend
    const another = async () => {
      const s = await open()
      others.push(s)
      return s
    }
    let tag: string
    const record = (suffix: string, hosts: string[], agents: CommunityRecord['agents'] = [], admins: string[] = []): CommunityRecord => ({
      id: `${tag}-${suffix}`,
      name: `community ${suffix}`,
      hosts: hosts.map((h) => `${h}.${tag}.example`),
      agents,
      admins,
      settings: DEFAULT_SETTINGS,
      kinds: { allowed: [], disallowed: [] },
    })
    const mine = async (s = store) => (await s.list()).filter((r) => r.id.startsWith(tag))
    const pubkey = (c: string) => c.repeat(64)

    beforeEach(async () => {
      store = await open()
      tag = `t${randomUUID().slice(0, 8)}`
    })
    afterEach(async () => {
      await Promise.all([store, ...others.splice(0)].map((s) => s.close()))
    })

    describe('communities and their hosts', () => {
      it('lists what was put, by id, with hosts by name and agents as given', async () => {
        const b = record('b', ['y', 'x'], [{ pubkey: pubkey('a'), tier: 'elevated' }])
        const a = record('a', ['z'])
        expect(await store.put(b)).toEqual({ ok: true })
        expect(await store.put(a)).toEqual({ ok: true })
        expect(await mine()).toEqual([a, { ...b, hosts: [...b.hosts].sort() }])
      })

      it('replaces a community by id: name, agents and hosts, releasing the hosts it dropped', async () => {
        await store.put(record('a', ['old', 'kept']))
        const changed = { ...record('a', ['kept', 'new'], [{ pubkey: pubkey('b'), tier: 'platform' }]), name: 'renamed' }
        expect(await store.put(changed)).toEqual({ ok: true })
        expect(await mine()).toEqual([changed])
        expect(await store.put(record('b', ['old']))).toEqual({ ok: true })
      })

      it('keeps admins as given, replaces them with the record, and lists none when put leaves them out', async () => {
        const a = record('a', ['admins'], [], [pubkey('c'), pubkey('d')])
        await store.put(a)
        expect(await mine(await another())).toEqual([a])
        await store.put({ ...a, admins: [pubkey('e')] })
        expect((await mine())[0]?.admins).toEqual([pubkey('e')])
        const { admins: _, ...withoutAdmins } = a
        await store.put(withoutAdmins)
        expect((await mine())[0]?.admins).toEqual([])
      })

      it('refuses to create an id that exists, archived or not, and changes nothing', async () => {
        const a = record('a', ['first'])
        const b = record('b', ['second'])
        expect(await store.put(a, { create: true })).toEqual({ ok: true })
        expect(await store.put({ ...a, name: 'again' }, { create: true })).toMatchObject({ ok: false, error: expect.any(String) })
        await store.put(b)
        await store.archive(b.id, 1_700_000_000)
        expect((await store.put(record('b', ['third']), { create: true })).ok).toBe(false)
        expect(await mine()).toEqual([a])
        expect((await store.put(record('c', ['third']))).ok).toBe(true)
      })

      it('refuses a host bound to another community and changes nothing', async () => {
        const a = record('a', ['shared'])
        await store.put(a)
        const refused = await store.put(record('b', ['own', 'shared']))
        expect(refused).toMatchObject({ ok: false, error: expect.any(String) })
        expect(await mine()).toEqual([a])
        const renamed = await store.put({ ...a, name: 'still mine', hosts: [...a.hosts, ...record('b', ['own']).hosts] })
        expect(renamed).toEqual({ ok: true })
      })

      it('binds a host to exactly one community when two nodes claim it at once', async () => {
        const node2 = await another()
        const outcomes = await Promise.all([store.put(record('a', ['contested'])), node2.put(record('b', ['contested']))])
        expect(outcomes.filter((o) => o.ok)).toHaveLength(1)
        const bound = (await mine(node2)).filter((r) => r.hosts.length > 0)
        expect(bound).toHaveLength(1)
      })

      it('archives a community for every node: no longer listed, its hosts still taken, archived once', async () => {
        const a = record('a', ['gone'])
        const b = record('b', ['stays'])
        await store.put(a)
        await store.put(b)
        expect(await store.archive(a.id, 1_700_000_000)).toBe(true)
        expect(await store.archive(a.id, 1_700_000_001)).toBe(false)
        expect(await store.archive(`${tag}-unknown`, 1_700_000_000)).toBe(false)
        expect(await mine(await another())).toEqual([b])
        expect((await store.put(record('c', ['gone']))).ok).toBe(false)
      })

      it('shows every node what one node put', async () => {
        const a = record('a', ['seen'])
        await store.put(a)
        expect(await mine(await another())).toEqual([a])
      })
    })

    describe('bans', () => {
      const NOW = 1_700_000_000
      const banOf = async (on: CommunityStore, community: string, who: string, now: number) =>
        (await on.bannedAmong(community, [who], now)).get(who)

      it('answers for many pubkeys in one call: the banned ones, by pubkey, and nothing for the rest', async () => {
        const c = `${tag}-many`
        await store.banPubkey(c, pubkey('a'), 'spam')
        await store.banPubkey(c, pubkey('c'), 'over', NOW)
        await store.banPubkey(`${tag}-elsewhere`, pubkey('b'), 'elsewhere')
        const found = await store.bannedAmong(c, [pubkey('a'), pubkey('b'), pubkey('c'), pubkey('d')], NOW)
        expect([...found]).toEqual([[pubkey('a'), { reason: 'spam' }]])
        expect((await store.bannedAmong(c, [], NOW)).size).toBe(0)
      })

      it('bans a pubkey in one community only, with its reason, until unbanned', async () => {
        const [here, there] = [`${tag}-here`, `${tag}-there`]
        expect(await banOf(store, here, pubkey('a'), NOW)).toBeUndefined()
        await store.banPubkey(here, pubkey('a'), 'spam')
        expect(await banOf(store, here, pubkey('a'), NOW)).toEqual({ reason: 'spam' })
        expect(await banOf(store, there, pubkey('a'), NOW)).toBeUndefined()
        expect(await banOf(store, here, pubkey('b'), NOW)).toBeUndefined()
        await store.unbanPubkey(here, pubkey('a'))
        expect(await banOf(store, here, pubkey('a'), NOW)).toBeUndefined()
        await store.unbanPubkey(here, pubkey('a'))
      })

      it('ends a timed ban at its end second, and lists only the bans in force', async () => {
        const c = `${tag}-timed`
        await store.banPubkey(c, pubkey('b'), 'cool down', NOW + 60)
        await store.banPubkey(c, pubkey('a'), 'forever')
        await store.banPubkey(c, pubkey('c'), 'over', NOW)
        expect(await banOf(store, c, pubkey('b'), NOW + 59)).toEqual({ reason: 'cool down' })
        expect(await banOf(store, c, pubkey('b'), NOW + 60)).toBeUndefined()
        expect(await banOf(store, c, pubkey('c'), NOW)).toBeUndefined()
        expect(await store.listBans(c, NOW)).toEqual([
          { pubkey: pubkey('a'), reason: 'forever' },
          { pubkey: pubkey('b'), reason: 'cool down', untilSeconds: NOW + 60 },
        ])
        expect(await store.listBans(c, NOW + 60)).toEqual([{ pubkey: pubkey('a'), reason: 'forever' }])
      })

      it("replaces a ban's reason and end when the pubkey is banned again", async () => {
        const c = `${tag}-again`
        await store.banPubkey(c, pubkey('a'), 'first', NOW + 10)
        await store.banPubkey(c, pubkey('a'), 'second')
        expect(await banOf(store, c, pubkey('a'), NOW + 3600)).toEqual({ reason: 'second' })
        expect(await store.listBans(c, NOW)).toEqual([{ pubkey: pubkey('a'), reason: 'second' }])
      })

      it('applies a ban made on one node on every node', async () => {
        const c = `${tag}-shared`
        const node2 = await another()
        await store.banPubkey(c, pubkey('a'), 'abuse')
        expect(await banOf(node2, c, pubkey('a'), NOW)).toEqual({ reason: 'abuse' })
        await node2.unbanPubkey(c, pubkey('a'))
        expect(await banOf(store, c, pubkey('a'), NOW)).toBeUndefined()
      })
    })

    describeCommunityPolicyContract({
      store: () => store,
      another,
      id: (suffix) => `${tag}-${suffix}`,
      record: (suffix) => record(suffix, [suffix]),
      mine: (s) => mine(s),
    })
  })
}
