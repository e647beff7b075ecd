import { describe, expect, it } from 'vitest'
import { makeKeys, type TestKeys } from '../support/events'
import {
  createChannel,
  delivered,
  deliveredBefore,
  editMetadata,
  join,
  leave,
  post,
  putUser,
  removeUser,
  subscribe,
} from '../support/nip29-client'
import type { TestRelay } from '../support/relay'
import { auth, client, count, idsOf, nowSeconds, publishNew, relayUrlOf, reqEvents } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'
import type { TestClient } from '../support/ws-client'

/**
 * A private channel's events reach only connections authenticated as one of its members (or as a community
 * admin): in stored results, in counts and live. Non-delivery is proven with a public marker published after.
 */
describe('private channels', () => {
  const relays = useRelays()

  /** a node with a private channel `vault` of `admin` (who also posts) with `member` in it; `outsider` is not */
  async function setup(overrides = {}) {
    const r = await relays.start(overrides)
    const admin = makeKeys()
    const member = makeKeys()
    const outsider = makeKeys()
    const c = await client(r)
    expect((await createChannel(c, admin, 'vault', { flags: ['private'] })).ok.accepted).toBe(true)
    expect((await putUser(c, admin, 'vault', member.pubkey)).ok.accepted).toBe(true)
    return { r, c, admin, member, outsider }
  }

  async function authed(r: TestRelay, keys: TestKeys, host?: string): Promise<TestClient> {
    const c = await client(r, host)
    expect((await auth(c, keys, relayUrlOf(r, host))).accepted).toBe(true)
    return c
  }

  /** a public kind 9 from `keys` (no h tag): the marker that follows a hidden event */
  const marker = (c: TestClient, keys: TestKeys) => publishNew(c, keys, { kind: 9 })

  describe('stored results (REQ)', () => {
    it('returns the channel’s events to an authenticated member, by #h and in an unfiltered kinds REQ', async () => {
      const { r, c, admin, member } = await setup()
      const secret = await post(c, admin, 'vault')
      const reader = await authed(r, member)
      expect(idsOf(await reqEvents(reader, [{ '#h': ['vault'], kinds: [9] }]))).toEqual([secret.event.id])
      expect(idsOf(await reqEvents(reader, [{ kinds: [9] }]))).toContain(secret.event.id)
    })

    it('returns none of them to an authenticated non-member, by #h, by id, by author or by kind', async () => {
      const { r, c, admin, outsider } = await setup()
      const secret = await post(c, admin, 'vault')
      const reader = await authed(r, outsider)
      expect(await reqEvents(reader, [{ '#h': ['vault'] }])).toEqual([])
      expect(await reqEvents(reader, [{ ids: [secret.event.id] }])).toEqual([])
      expect(await reqEvents(reader, [{ authors: [admin.pubkey], kinds: [9] }])).toEqual([])
      expect(await reqEvents(reader, [{ kinds: [9] }])).toEqual([])
    })

    it('returns none of them to an unauthenticated connection, even one the member’s own key will later use', async () => {
      const { r, c, admin } = await setup()
      const secret = await post(c, admin, 'vault')
      const anon = await client(r)
      expect(await reqEvents(anon, [{ '#h': ['vault'] }])).toEqual([])
      expect(await reqEvents(anon, [{ ids: [secret.event.id] }])).toEqual([])
      expect(await reqEvents(anon, [{ kinds: [9] }])).toEqual([])
    })

    it('fills a limit with visible events: hidden ones never take places', async () => {
      const { r, c, admin, outsider, member } = await setup()
      const now = nowSeconds()
      const open: string[] = []
      for (let i = 0; i < 3; i++) open.push((await publishNew(c, admin, { kind: 9, created_at: now - 20 + i })).event.id)
      const hidden: string[] = []
      for (let i = 0; i < 3; i++) hidden.push((await post(c, admin, 'vault', now - 10 + i)).event.id)
      const filter = { kinds: [9], authors: [admin.pubkey], limit: 3 }
      expect(idsOf(await reqEvents(await authed(r, outsider), [filter])).sort()).toEqual(open.sort())
      expect(idsOf(await reqEvents(await client(r), [filter])).sort()).toEqual(open.sort())
      // the member sees the three newest, which are the private ones
      expect(idsOf(await reqEvents(await authed(r, member), [filter])).sort()).toEqual(hidden.sort())
    })

    it('serves them to a community admin who is not a member of the channel', async () => {
      const boss = makeKeys()
      const r = await relays.start({ communities: [{ id: 'hive', hosts: ['hive.test'], admins: [boss.pubkey] }] })
      const owner = makeKeys()
      const c = await client(r, 'hive.test')
      await createChannel(c, owner, 'den', { flags: ['private'] })
      const secret = await post(c, owner, 'den')
      expect(idsOf(await reqEvents(await authed(r, boss, 'hive.test'), [{ '#h': ['den'], kinds: [9] }]))).toEqual([secret.event.id])
      expect(await reqEvents(await authed(r, makeKeys(), 'hive.test'), [{ '#h': ['den'] }])).toEqual([])
    })
  })

  describe('COUNT', () => {
    it('counts only the events the connection may read', async () => {
      const { r, c, admin, member, outsider } = await setup()
      const filter = { kinds: [9], authors: [admin.pubkey] }
      for (let i = 0; i < 2; i++) await publishNew(c, admin, { kind: 9 })
      for (let i = 0; i < 3; i++) expect((await post(c, admin, 'vault')).ok.accepted).toBe(true)
      expect(await count(await authed(r, member), [filter])).toBe(5)
      expect(await count(await authed(r, outsider), [filter])).toBe(2)
      expect(await count(await client(r), [filter])).toBe(2)
      expect(await count(await authed(r, outsider), [{ '#h': ['vault'] }])).toBe(0)
    })
  })

  describe('live delivery', () => {
    it('delivers a new channel event to an authenticated member only: not to a non-member, not to an unauthenticated socket', async () => {
      const { r, c, admin, member, outsider } = await setup()
      const filter = { kinds: [9], authors: [admin.pubkey] }
      const readers = { member: await authed(r, member), outsider: await authed(r, outsider), anon: await client(r) }
      const subs = {
        member: await subscribe(readers.member, [filter]),
        outsider: await subscribe(readers.outsider, [filter]),
        anon: await subscribe(readers.anon, [filter]),
      }
      const secret = await post(c, admin, 'vault')
      expect(secret.ok.accepted).toBe(true)
      const after = await marker(c, admin)
      expect(await deliveredBefore(readers.member, subs.member.subId, secret.event.id, after.event.id)).toBe(true)
      expect(await deliveredBefore(readers.outsider, subs.outsider.subId, secret.event.id, after.event.id)).toBe(false)
      expect(await deliveredBefore(readers.anon, subs.anon.subId, secret.event.id, after.event.id)).toBe(false)
    })

    it('delivers to a member who joined an open private channel after subscribing', async () => {
      const { r, c, admin } = await setup()
      await createChannel(c, admin, 'lobby', { flags: ['private', 'open'] })
      const newcomer = makeKeys()
      const reader = await authed(r, newcomer)
      const { subId } = await subscribe(reader, [
        { '#h': ['lobby'], kinds: [9] },
        { kinds: [9], authors: [admin.pubkey] },
      ])
      const before = await post(c, admin, 'lobby')
      const m1 = await marker(c, admin)
      expect(await deliveredBefore(reader, subId, before.event.id, m1.event.id)).toBe(false)
      expect((await join(c, newcomer, 'lobby')).ok.accepted).toBe(true)
      const after = await post(c, admin, 'lobby')
      await delivered(reader, subId, after.event.id)
    })

    it('stops delivering to a removed member’s open subscription as soon as the 9001 is answered', async () => {
      const { r, c, admin, member } = await setup()
      const reader = await authed(r, member)
      const { subId } = await subscribe(reader, [{ kinds: [9], authors: [admin.pubkey] }])
      const first = await post(c, admin, 'vault')
      // the member's answer is now cached on this node: only the invalidation can stop the next delivery
      await delivered(reader, subId, first.event.id)
      expect((await removeUser(c, admin, 'vault', member.pubkey)).ok.accepted).toBe(true)
      const second = await post(c, admin, 'vault')
      const after = await marker(c, admin)
      expect(await deliveredBefore(reader, subId, second.event.id, after.event.id)).toBe(false)
      expect(await reqEvents(reader, [{ '#h': ['vault'] }])).toEqual([])
    })

    it('stops delivering to a member who left (9022)', async () => {
      const { r, c, admin, member } = await setup()
      const reader = await authed(r, member)
      const { subId } = await subscribe(reader, [{ kinds: [9], authors: [admin.pubkey] }])
      await delivered(reader, subId, (await post(c, admin, 'vault')).event.id)
      expect((await leave(c, member, 'vault')).ok.accepted).toBe(true)
      const second = await post(c, admin, 'vault')
      const after = await marker(c, admin)
      expect(await deliveredBefore(reader, subId, second.event.id, after.event.id)).toBe(false)
    })
  })

  describe('making the channel public (9002)', () => {
    it('lets non-members read its stored events and receive new ones live', async () => {
      const { r, c, admin, outsider } = await setup()
      const old = await post(c, admin, 'vault')
      const reader = await authed(r, outsider)
      const anon = await client(r)
      const { subId } = await subscribe(reader, [{ '#h': ['vault'] }])
      const { subId: anonSub } = await subscribe(anon, [{ '#h': ['vault'] }])
      expect((await editMetadata(c, admin, 'vault', { flags: ['public'] })).ok.accepted).toBe(true)
      expect(idsOf(await reqEvents(reader, [{ '#h': ['vault'], kinds: [9] }]))).toEqual([old.event.id])
      expect(idsOf(await reqEvents(await client(r), [{ ids: [old.event.id] }]))).toEqual([old.event.id])
      const fresh = await post(c, admin, 'vault')
      await delivered(reader, subId, fresh.event.id)
      await delivered(anon, anonSub, fresh.event.id)
    })

    it('gives a non-member nothing more once a public channel it was reading live is made private', async () => {
      const { r, c, admin, outsider } = await setup()
      await editMetadata(c, admin, 'vault', { flags: ['public'] })
      const reader = await authed(r, outsider)
      // the channel's events, and the public marker that proves what came before it
      const { subId } = await subscribe(reader, [{ '#h': ['vault'] }, { kinds: [9], authors: [admin.pubkey] }])
      // the reader's node has now decided a live event of the public channel (its caches are warm)
      await delivered(reader, subId, (await post(c, admin, 'vault')).event.id)
      expect((await editMetadata(c, admin, 'vault', { flags: ['private'] })).ok.accepted).toBe(true)
      const secret = await post(c, admin, 'vault')
      const after = await marker(c, admin)
      expect(await deliveredBefore(reader, subId, secret.event.id, after.event.id)).toBe(false)
      expect(await reqEvents(reader, [{ ids: [secret.event.id] }])).toEqual([])
    })

    it('hides them again when it is made private once more', async () => {
      const { r, c, admin, outsider } = await setup()
      await editMetadata(c, admin, 'vault', { flags: ['public'] })
      const message = await post(c, admin, 'vault')
      const reader = await authed(r, outsider)
      expect(idsOf(await reqEvents(reader, [{ '#h': ['vault'] }]))).toContain(message.event.id)
      const { subId } = await subscribe(reader, [{ kinds: [9], authors: [admin.pubkey] }])
      expect((await editMetadata(c, admin, 'vault', { flags: ['private'] })).ok.accepted).toBe(true)
      expect(await reqEvents(reader, [{ '#h': ['vault'] }])).toEqual([])
      const secret = await post(c, admin, 'vault')
      const after = await marker(c, admin)
      expect(await deliveredBefore(reader, subId, secret.event.id, after.event.id)).toBe(false)
    })
  })
})
