import { describe, expect, it } from 'vitest'
import type { ChannelFlag } from '../../src/protocols/nip29'
import { makeKeys, type TestKeys } from '../support/events'
import { eventually } from '../support/eventually'
import {
  channelState,
  createChannel,
  createInvite,
  deleteChannel,
  deliveredBefore,
  editMetadata,
  join,
  post,
  putUser,
  subscribe,
  tagValues,
} from '../support/nip29-client'
import type { TestRelay } from '../support/relay'
import { auth, client, count, nowSeconds, relayUrlOf, reqEvents } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'
import type { TestClient } from '../support/ws-client'

/** NIP-29 invite codes (9009, and 9021 with `code`) in one community of one node. */
describe('NIP-29 invite codes', () => {
  const relays = useRelays()
  const boss = makeKeys()

  /** a closed channel `club` of `admin` in community `hive`, whose admin is `boss` */
  async function setup(flags: ChannelFlag[] = ['closed', 'restricted']) {
    const r = await relays.start({ communities: [{ id: 'hive', hosts: ['hive.test'], admins: [boss.pubkey] }] })
    const c = await client(r, 'hive.test')
    const admin = makeKeys()
    expect((await createChannel(c, admin, 'club', { flags })).ok.accepted).toBe(true)
    return { r, c, admin }
  }

  const authed = async (r: TestRelay, keys: TestKeys): Promise<TestClient> => {
    const c = await client(r, 'hive.test')
    expect((await auth(c, keys, relayUrlOf(r, 'hive.test'))).accepted).toBe(true)
    return c
  }

  const memberKeys = async (c: TestClient) => tagValues((await channelState(c, 'club')).members, 'p')

  describe('joining a closed channel with a code', () => {
    it('admits at once: OK true, the relay’s own 9000, listed in 39002, and it may post', async () => {
      const { r, c, admin } = await setup()
      const alice = makeKeys()
      expect((await createInvite(c, admin, 'club', 'welcome')).ok).toEqual({ accepted: true, message: '', prefix: undefined })
      expect((await join(c, alice, 'club', 'welcome')).ok).toEqual({ accepted: true, message: '', prefix: undefined })
      expect(
        await reqEvents(c, [{ kinds: [9000], authors: [r.relay.communityPubkey('hive')], '#h': ['club'], '#p': [alice.pubkey] }]),
      ).toHaveLength(1)
      expect(await memberKeys(c)).toContain(alice.pubkey)
      expect((await post(c, alice, 'club')).ok.accepted).toBe(true)
    })

    it('refuses a second join with a single-use code with "restricted:" saying it is used up; the joiner is not admitted', async () => {
      const { c, admin } = await setup()
      await createInvite(c, admin, 'club', 'once')
      expect((await join(c, makeKeys(), 'club', 'once')).ok.accepted).toBe(true)
      const bob = makeKeys()
      const second = await join(c, bob, 'club', 'once')
      expect(second.ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect(second.ok.message).toMatch(/used up/)
      expect(await memberKeys(c)).not.toContain(bob.pubkey)
      expect((await post(c, bob, 'club')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
    })

    it('admits exactly one of two connections racing with one single-use code', async () => {
      const { r, admin } = await setup()
      const setupClient = await client(r, 'hive.test')
      await createInvite(setupClient, admin, 'club', 'race')
      const [alice, bob] = [makeKeys(), makeKeys()]
      const [c1, c2] = await Promise.all([client(r, 'hive.test'), client(r, 'hive.test')])
      const answers = await Promise.all([join(c1, alice, 'club', 'race'), join(c2, bob, 'club', 'race')])
      expect(answers.map((a) => a.ok.accepted).sort()).toEqual([false, true])
      expect(answers.find((a) => !a.ok.accepted)?.ok.prefix).toBe('restricted')
      const members = await memberKeys(setupClient)
      expect([alice.pubkey, bob.pubkey].filter((p) => members.includes(p))).toHaveLength(1)
    })

    it('admits as many joins as a code’s `uses` tag says, then refuses with "restricted:"', async () => {
      const { c, admin } = await setup()
      expect((await createInvite(c, admin, 'club', 'three', { uses: 3 })).ok.accepted).toBe(true)
      const answers = []
      for (let i = 0; i < 4; i++) answers.push((await join(c, makeKeys(), 'club', 'three')).ok)
      expect(answers.map((a) => a.accepted)).toEqual([true, true, true, false])
      expect(answers[3]?.prefix).toBe('restricted')
    })

    it('refuses an unknown code with "restricted:" naming it, and a code of another channel the same way', async () => {
      const { c, admin } = await setup()
      expect((await createChannel(c, admin, 'other', { flags: ['closed'] })).ok.accepted).toBe(true)
      await createInvite(c, admin, 'other', 'elsewhere')
      for (const code of ['never-made', 'elsewhere']) {
        const answer = await join(c, makeKeys(), 'club', code)
        expect(answer.ok).toMatchObject({ accepted: false, prefix: 'restricted' })
        expect(answer.ok.message).toMatch(/unknown invite code/)
      }
    })

    it('refuses a code once its expiration (NIP-40 on the 9009) has passed, with "restricted:" saying it expired', async () => {
      const { c, admin } = await setup()
      expect((await createInvite(c, admin, 'club', 'brief', { uses: 10_000, expiration: nowSeconds() + 2 })).ok.accepted).toBe(true)
      const last = await eventually(
        () => join(c, makeKeys(), 'club', 'brief'),
        (a) => !a.ok.accepted,
        'a join refused once the code has expired',
        { timeoutMs: 6_000, intervalMs: 200 },
      )
      expect(last.ok.prefix).toBe('restricted')
      expect(last.ok.message).toMatch(/expired/)
    })

    it('refuses an already-expired 9009 with "invalid:" and makes no code of it', async () => {
      const { c, admin } = await setup()
      expect((await createInvite(c, admin, 'club', 'stale', { expiration: nowSeconds() - 1 })).ok).toMatchObject({
        accepted: false,
        prefix: 'invalid',
      })
      expect((await join(c, makeKeys(), 'club', 'stale')).ok.message).toMatch(/unknown invite code/)
    })

    it('answers a member’s join with a code "duplicate:" and takes no use of it', async () => {
      const { c, admin } = await setup()
      await createInvite(c, admin, 'club', 'once')
      expect((await join(c, admin, 'club', 'once')).ok).toMatchObject({ accepted: false, prefix: 'duplicate' })
      expect((await join(c, makeKeys(), 'club', 'once')).ok.accepted).toBe(true)
    })

    it('admits nobody by a code once its channel is deleted (9008)', async () => {
      const { c, admin } = await setup()
      await createInvite(c, admin, 'club', 'doomed', { uses: 5 })
      expect((await deleteChannel(c, admin, 'club')).ok.accepted).toBe(true)
      expect((await join(c, makeKeys(), 'club', 'doomed')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
    })
  })

  describe('an open channel', () => {
    it('admits a join with a code without using the code up: it still admits once the channel is closed', async () => {
      const { c, admin } = await setup([])
      await createInvite(c, admin, 'club', 'spare')
      const alice = makeKeys()
      expect((await join(c, alice, 'club', 'spare')).ok.accepted).toBe(true)
      expect(await memberKeys(c)).toContain(alice.pubkey)
      expect((await editMetadata(c, admin, 'club', { flags: ['closed'] })).ok.accepted).toBe(true)
      expect((await join(c, makeKeys(), 'club', 'spare')).ok.accepted).toBe(true)
    })
  })

  describe('creating a code (9009)', () => {
    it('answers a code the channel already has with "duplicate:", and the first code keeps its uses', async () => {
      const { c, admin } = await setup()
      expect((await createInvite(c, admin, 'club', 'same')).ok.accepted).toBe(true)
      expect((await createInvite(c, admin, 'club', 'same', { uses: 50 })).ok).toMatchObject({ accepted: false, prefix: 'duplicate' })
      expect((await join(c, makeKeys(), 'club', 'same')).ok.accepted).toBe(true)
      expect((await join(c, makeKeys(), 'club', 'same')).ok.message).toMatch(/used up/)
    })

    it('lets a community admin make a code, and refuses a plain member and a stranger with "restricted:"', async () => {
      const { c, admin } = await setup()
      const member = makeKeys()
      await putUser(c, admin, 'club', member.pubkey)
      expect((await createInvite(c, boss, 'club', 'from-boss')).ok.accepted).toBe(true)
      expect((await createInvite(c, member, 'club', 'from-member')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect((await createInvite(c, makeKeys(), 'club', 'from-stranger')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect((await join(c, makeKeys(), 'club', 'from-boss')).ok.accepted).toBe(true)
      expect((await join(c, makeKeys(), 'club', 'from-member')).ok.message).toMatch(/unknown invite code/)
    })

    it('refuses a code of 129 characters with "invalid:" and takes one of 128', async () => {
      const { c, admin } = await setup()
      expect((await createInvite(c, admin, 'club', 'k'.repeat(129))).ok).toMatchObject({ accepted: false, prefix: 'invalid' })
      expect((await createInvite(c, admin, 'club', 'k'.repeat(128))).ok.accepted).toBe(true)
      expect((await join(c, makeKeys(), 'club', 'k'.repeat(128))).ok.accepted).toBe(true)
    })
  })

  describe('keeping codes secret', () => {
    it('serves neither a 9009 nor a 9021 carrying a code to anyone: not by id, kind, #h nor COUNT, not even to the admins', async () => {
      const { r, c, admin } = await setup()
      const alice = makeKeys()
      const created = await createInvite(c, admin, 'club', 'secret', { uses: 2 })
      const joined = await join(c, alice, 'club', 'secret')
      const ids = [created.event.id, joined.event.id]
      for (const reader of [await client(r, 'hive.test'), await authed(r, admin), await authed(r, boss), await authed(r, alice)]) {
        expect(await reqEvents(reader, [{ ids }])).toEqual([])
        expect(await reqEvents(reader, [{ kinds: [9009, 9021] }])).toEqual([])
        expect((await reqEvents(reader, [{ '#h': ['club'] }])).filter((e) => ids.includes(e.id))).toEqual([])
        expect(await count(reader, [{ ids }])).toBe(0)
        expect(await count(reader, [{ kinds: [9009] }])).toBe(0)
      }
    })

    it('delivers neither live, while it delivers the relay’s 9000 for the join', async () => {
      const { r, c, admin } = await setup()
      const alice = makeKeys()
      const watcher = await authed(r, boss)
      const { subId } = await subscribe(watcher, [{ '#h': ['club'] }, { kinds: [9009, 9021] }])
      const created = await createInvite(c, admin, 'club', 'hush')
      const joined = await join(c, alice, 'club', 'hush')
      const marker = await post(c, admin, 'club')
      expect(await deliveredBefore(watcher, subId, created.event.id, marker.event.id)).toBe(false)
      expect(watcher.frames.some((f) => f[0] === 'EVENT' && f[1] === subId && (f[2] as { id: string }).id === joined.event.id)).toBe(false)
      const added = watcher.frames.filter(
        (f) => f[0] === 'EVENT' && f[1] === subId && (f[2] as { kind: number; pubkey: string }).kind === 9000,
      )
      expect(added.map((f) => (f[2] as { pubkey: string }).pubkey)).toEqual([r.relay.communityPubkey('hive')])
    })

    it('answers a resent 9009 "duplicate:" (OK true), as for a stored event', async () => {
      const { c, admin } = await setup()
      const first = await createInvite(c, admin, 'club', 'again')
      expect(first.ok.accepted).toBe(true)
      c.send(['EVENT', first.event])
      const resent = await c.ok(first.event.id)
      expect(resent[2]).toBe(true)
      expect(String(resent[3])).toMatch(/^duplicate:/)
    })
  })
})
