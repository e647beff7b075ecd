import { randomBytes } from 'node:crypto'
import { hexToBytes } from '@noble/hashes/utils.js'
import { getPublicKey } from 'nostr-tools/pure'
import { describe, expect, it } from 'vitest'
import { deriveCommunityKey } from '../../src/infra/community-key'
import { makeKeys, type TestKeys } from '../support/events'
import { eventually } from '../support/eventually'
import {
  channelEvent,
  channelState,
  createChannel,
  deleteChannel,
  deleteEvents,
  editMetadata,
  hasFlag,
  join,
  leave,
  post,
  putUser,
  removeUser,
  tagValues,
} from '../support/nip29-client'
import type { TestRelay } from '../support/relay'
import { auth, client, fresh, idsOf, nowSeconds, publish, relayUrlOf, reqEvents } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'

/** NIP-29 channels inside one community of one embedded node: who may do what, and what the relay publishes. */
describe('NIP-29 channels', () => {
  const relays = useRelays()

  async function setup() {
    const r = await relays.start()
    return { r, c: await client(r), admin: makeKeys(), alice: makeKeys(), bob: makeKeys() }
  }

  describe('creating a channel (kind 9007)', () => {
    it('answers OK true and publishes 39000, 39001 and 39002 signed by the community’s key with the channel state', async () => {
      const { r, c, admin } = await setup()
      const created = await createChannel(c, admin, 'bees', {
        name: 'Bees',
        about: 'all about bees',
        picture: 'https://x.test/b.png',
        flags: ['private', 'closed'],
      })
      expect(created.ok).toEqual({ accepted: true, message: '', prefix: undefined })
      // a private channel's admin and member lists are its members' to read
      expect((await auth(c, admin, relayUrlOf(r))).accepted).toBe(true)
      const { metadata, admins, members } = await channelState(c, 'bees')
      for (const e of [metadata, admins, members]) {
        expect(e?.pubkey).toBe(r.relay.communityPubkey('default'))
        expect(tagValues(e, 'd')).toEqual(['bees'])
      }
      expect(tagValues(metadata, 'name')).toEqual(['Bees'])
      expect(tagValues(metadata, 'about')).toEqual(['all about bees'])
      expect(tagValues(metadata, 'picture')).toEqual(['https://x.test/b.png'])
      expect([hasFlag(metadata, 'private'), hasFlag(metadata, 'public')]).toEqual([true, false])
      expect([hasFlag(metadata, 'closed'), hasFlag(metadata, 'open')]).toEqual([true, false])
      expect(admins?.tags.filter((t) => t[0] === 'p')).toEqual([['p', admin.pubkey, 'admin']])
      expect(tagValues(members, 'p')).toEqual([admin.pubkey])
    })

    it('keeps 39002 current through a burst of 30 membership changes, never dating it more than a few seconds ahead', async () => {
      const { c, admin } = await setup()
      expect((await createChannel(c, admin, 'busy')).ok.accepted).toBe(true)
      const added = Array.from({ length: 30 }, () => makeKeys().pubkey)
      const oks = await Promise.all(added.map((p) => putUser(c, admin, 'busy', p)))
      expect(oks.every((o) => o.ok.accepted)).toBe(true)
      const want = new Set([admin.pubkey, ...added])
      const { members } = await eventually(
        () => channelState(c, 'busy'),
        (s) => tagValues(s.members, 'p').length === want.size,
        'a 39002 listing every member',
        { timeoutMs: 10_000, intervalMs: 100 },
      )
      expect(new Set(tagValues(members, 'p'))).toEqual(want)
      // MAX_STATE_AHEAD_SECONDS is 5; a second of slack for the clock turning between signing and here
      expect(members!.created_at).toBeLessThanOrEqual(nowSeconds() + 6)
    })

    it('describes a channel created without flags with no flag tag at all (public, unrestricted, visible, open), named after its id', async () => {
      const { c, admin } = await setup()
      expect((await createChannel(c, admin, 'plain')).ok.accepted).toBe(true)
      const { metadata } = await channelState(c, 'plain')
      expect(tagValues(metadata, 'name')).toEqual(['plain'])
      expect(metadata?.tags.filter((t) => t.length === 1)).toEqual([])
    })

    it('lets the creator post at once', async () => {
      const { c, admin } = await setup()
      await createChannel(c, admin, 'mine')
      expect((await post(c, admin, 'mine')).ok.accepted).toBe(true)
    })

    it('refuses a second create of an existing id with "duplicate:" and keeps the first creator the only admin', async () => {
      const { c, admin, alice } = await setup()
      await createChannel(c, admin, 'taken', { name: 'first' })
      const again = await createChannel(c, alice, 'taken', { name: 'second' })
      expect(again.ok).toMatchObject({ accepted: false, prefix: 'duplicate' })
      const { metadata, admins } = await channelState(c, 'taken')
      expect(tagValues(metadata, 'name')).toEqual(['first'])
      expect(tagValues(admins, 'p')).toEqual([admin.pubkey])
    })

    it('refuses to create again the id of a deleted channel with "blocked:"', async () => {
      const { c, admin, alice } = await setup()
      await createChannel(c, admin, 'gone')
      expect((await deleteChannel(c, admin, 'gone')).ok.accepted).toBe(true)
      expect((await createChannel(c, alice, 'gone')).ok).toMatchObject({ accepted: false, prefix: 'blocked' })
      expect((await createChannel(c, admin, 'gone')).ok).toMatchObject({ accepted: false, prefix: 'blocked' })
    })

    it('refuses an h tag of 65 characters, or with whitespace or a control character, with "invalid:"', async () => {
      const { c, admin } = await setup()
      for (const id of ['x'.repeat(65), 'two words', 'tab\there', 'bell\u0007', 'nel\u0085'])
        expect((await createChannel(c, admin, id)).ok).toMatchObject({ accepted: false, prefix: 'invalid' })
      expect((await createChannel(c, admin, 'x'.repeat(64))).ok.accepted).toBe(true)
    })

    it('serves a channel whose id is mixed-case and random, as NDK makes them: create, join, post, state', async () => {
      const { r, c, admin, alice } = await setup()
      const id = 'aB3xY9kLm2Qp'
      expect((await createChannel(c, admin, id, { name: 'NDK', flags: ['restricted'] })).ok.accepted).toBe(true)
      // another channel whose id differs only in case is another channel
      expect((await createChannel(c, alice, id.toLowerCase())).ok.accepted).toBe(true)
      expect((await post(c, alice, id)).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect((await join(c, alice, id)).ok.accepted).toBe(true)
      const message = await post(c, alice, id)
      expect(message.ok.accepted).toBe(true)
      expect(idsOf(await reqEvents(c, [{ kinds: [9], '#h': [id] }]))).toEqual([message.event.id])
      const { metadata, members } = await channelState(c, id)
      expect(metadata?.pubkey).toBe(r.relay.communityPubkey('default'))
      expect(tagValues(metadata, 'name')).toEqual(['NDK'])
      expect(tagValues(members, 'p').sort()).toEqual([admin.pubkey, alice.pubkey].sort())
      expect(tagValues((await channelState(c, id.toLowerCase())).members, 'p')).toEqual([alice.pubkey])
    })
  })

  describe('posting to a channel', () => {
    it('refuses a non-member of a restricted channel with "restricted:" and accepts a member', async () => {
      const { c, admin, alice, bob } = await setup()
      await createChannel(c, admin, 'room', { flags: ['restricted'] })
      expect((await post(c, alice, 'room')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect((await putUser(c, admin, 'room', bob.pubkey)).ok.accepted).toBe(true)
      expect((await post(c, bob, 'room')).ok.accepted).toBe(true)
    })

    it('accepts a post from anyone to a channel that is not restricted, and refuses it once an edit restricts it', async () => {
      const { c, admin, alice } = await setup()
      expect((await createChannel(c, admin, 'square')).ok.accepted).toBe(true)
      expect((await post(c, alice, 'square')).ok.accepted).toBe(true)
      expect((await editMetadata(c, admin, 'square', { flags: ['restricted'] })).ok.accepted).toBe(true)
      expect(hasFlag((await channelState(c, 'square')).metadata, 'restricted')).toBe(true)
      expect((await post(c, alice, 'square')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect((await editMetadata(c, admin, 'square', { flags: ['unrestricted'] })).ok.accepted).toBe(true)
      expect((await post(c, alice, 'square')).ok.accepted).toBe(true)
    })

    it('refuses a post to a channel that does not exist with "restricted:"', async () => {
      const { c, alice } = await setup()
      expect((await post(c, alice, 'nowhere')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
    })

    it('refuses an event with two h tags with "invalid:", even when the author is a member of both', async () => {
      const { c, admin } = await setup()
      await createChannel(c, admin, 'one')
      await createChannel(c, admin, 'two')
      const both = await channelEvent(c, admin, 'one', 9, [['h', 'two']])
      expect(both.ok).toMatchObject({ accepted: false, prefix: 'invalid' })
      expect((await post(c, admin, 'one')).ok.accepted).toBe(true)
    })

    it('accepts events without an h tag from anyone, as before channels existed', async () => {
      const { c, alice } = await setup()
      expect((await publish(c, fresh(alice, { kind: 9 }))).accepted).toBe(true)
    })
  })

  describe('joining (kind 9021)', () => {
    it('makes a pubkey a member of an open channel at once: it can post, and 39002 lists it', async () => {
      const { r, c, admin, alice } = await setup()
      await createChannel(c, admin, 'open-room', { flags: ['open'] })
      expect((await join(c, alice, 'open-room')).ok).toEqual({ accepted: true, message: '', prefix: undefined })
      expect((await post(c, alice, 'open-room')).ok.accepted).toBe(true)
      expect(tagValues((await channelState(c, 'open-room')).members, 'p').sort()).toEqual([admin.pubkey, alice.pubkey].sort())
      const added = await reqEvents(c, [
        { kinds: [9000], authors: [r.relay.communityPubkey('default')], '#h': ['open-room'], '#p': [alice.pubkey] },
      ])
      expect(added).toHaveLength(1)
    })

    it('answers a join to a closed channel "restricted:" (pending), stores it for the admins, and admits no one until one puts the user in', async () => {
      const { r, c, admin, alice } = await setup()
      await createChannel(c, admin, 'club', { flags: ['closed', 'restricted'] })
      const request = await join(c, alice, 'club')
      expect(request.ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect(request.ok.message).toMatch(/pending/)
      expect(idsOf(await reqEvents(c, [{ kinds: [9021], '#h': ['club'] }]))).toEqual([request.event.id])
      expect((await post(c, alice, 'club')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect(tagValues((await channelState(c, 'club')).members, 'p')).toEqual([admin.pubkey])
      expect(await reqEvents(c, [{ kinds: [9000], authors: [r.relay.communityPubkey('default')], '#h': ['club'] }])).toEqual([])
      expect((await putUser(c, admin, 'club', alice.pubkey)).ok.accepted).toBe(true)
      expect((await post(c, alice, 'club')).ok.accepted).toBe(true)
    })

    it('refuses a join from a member with "duplicate:"', async () => {
      const { c, admin, alice } = await setup()
      await createChannel(c, admin, 'again')
      expect((await join(c, alice, 'again')).ok.accepted).toBe(true)
      expect((await join(c, alice, 'again')).ok).toMatchObject({ accepted: false, prefix: 'duplicate' })
      expect((await join(c, admin, 'again')).ok).toMatchObject({ accepted: false, prefix: 'duplicate' })
    })

    it('refuses a join to a channel that does not exist with "restricted:"', async () => {
      const { c, alice } = await setup()
      expect((await join(c, alice, 'ghost')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
    })
  })

  describe('leaving (kind 9022)', () => {
    it('publishes the relay’s own 9001 for the leaver, drops it from 39002, and refuses its next post with "restricted:"', async () => {
      const { r, c, admin, alice } = await setup()
      await createChannel(c, admin, 'exit', { flags: ['restricted'] })
      await join(c, alice, 'exit')
      expect((await post(c, alice, 'exit')).ok.accepted).toBe(true)
      expect((await leave(c, alice, 'exit')).ok).toEqual({ accepted: true, message: '', prefix: undefined })
      const removed = await reqEvents(c, [{ kinds: [9001], authors: [r.relay.communityPubkey('default')], '#h': ['exit'] }])
      expect(removed).toHaveLength(1)
      expect(tagValues(removed[0], 'p')).toEqual([alice.pubkey])
      expect(tagValues((await channelState(c, 'exit')).members, 'p')).toEqual([admin.pubkey])
      expect((await post(c, alice, 'exit')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
    })

    it('refuses a leave from a non-member with "restricted:"', async () => {
      const { c, admin, alice } = await setup()
      await createChannel(c, admin, 'never-in')
      expect((await leave(c, alice, 'never-in')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
    })
  })

  describe('moderation by the channel’s admins', () => {
    it('lets an admin put a user in (9000), as admin when the p tag says so, and 39001 lists the new admin', async () => {
      const { c, admin, alice, bob } = await setup()
      await createChannel(c, admin, 'mods')
      expect((await putUser(c, admin, 'mods', alice.pubkey, 'admin')).ok.accepted).toBe(true)
      expect(tagValues((await channelState(c, 'mods')).admins, 'p').sort()).toEqual([admin.pubkey, alice.pubkey].sort())
      // the new admin moderates too
      expect((await putUser(c, alice, 'mods', bob.pubkey)).ok.accepted).toBe(true)
      expect((await post(c, bob, 'mods')).ok.accepted).toBe(true)
      expect(tagValues((await channelState(c, 'mods')).admins, 'p')).not.toContain(bob.pubkey)
    })

    it('refuses put-user from a non-admin with "restricted:", a plain member included', async () => {
      const { c, admin, alice, bob } = await setup()
      await createChannel(c, admin, 'strict', { flags: ['restricted'] })
      expect((await putUser(c, alice, 'strict', bob.pubkey)).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      await join(c, alice, 'strict')
      expect((await putUser(c, alice, 'strict', bob.pubkey)).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect((await post(c, bob, 'strict')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
    })

    it('removes a member (9001): its next post is refused with "restricted:" and 39002 no longer lists it', async () => {
      const { c, admin, alice } = await setup()
      await createChannel(c, admin, 'kick', { flags: ['restricted'] })
      await putUser(c, admin, 'kick', alice.pubkey)
      expect((await post(c, alice, 'kick')).ok.accepted).toBe(true)
      expect((await removeUser(c, admin, 'kick', alice.pubkey)).ok.accepted).toBe(true)
      expect((await post(c, alice, 'kick')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect(tagValues((await channelState(c, 'kick')).members, 'p')).toEqual([admin.pubkey])
    })

    it('refuses remove-user from a member who is not an admin with "restricted:"; the target stays a member', async () => {
      const { c, admin, alice, bob } = await setup()
      await createChannel(c, admin, 'no-kick')
      await join(c, alice, 'no-kick')
      await join(c, bob, 'no-kick')
      expect((await removeUser(c, alice, 'no-kick', bob.pubkey)).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect((await post(c, bob, 'no-kick')).ok.accepted).toBe(true)
    })

    it('flips a channel from public to private with edit-metadata (9002), and 39000 then says private', async () => {
      const { c, admin } = await setup()
      await createChannel(c, admin, 'flip', { name: 'Flip', flags: ['public'] })
      expect((await editMetadata(c, admin, 'flip', { flags: ['private'] })).ok.accepted).toBe(true)
      const { metadata } = await channelState(c, 'flip')
      expect([hasFlag(metadata, 'private'), hasFlag(metadata, 'public')]).toEqual([true, false])
      expect(tagValues(metadata, 'name')).toEqual(['Flip'])
    })

    it('leaves the flags alone when an edit-metadata carries none (a rename keeps a private channel private)', async () => {
      const { c, admin } = await setup()
      await createChannel(c, admin, 'rename', { name: 'Old', flags: ['private', 'closed'] })
      expect((await editMetadata(c, admin, 'rename', { name: 'New' })).ok.accepted).toBe(true)
      const { metadata } = await channelState(c, 'rename')
      expect(tagValues(metadata, 'name')).toEqual(['New'])
      expect([hasFlag(metadata, 'private'), hasFlag(metadata, 'closed')]).toEqual([true, true])
    })

    it('refuses edit-metadata from a non-admin with "restricted:" and 39000 keeps its state', async () => {
      const { c, admin, alice } = await setup()
      await createChannel(c, admin, 'keep', { name: 'Keep', flags: ['public'] })
      await join(c, alice, 'keep')
      expect((await editMetadata(c, alice, 'keep', { name: 'Hijacked', flags: ['private'] })).ok).toMatchObject({
        accepted: false,
        prefix: 'restricted',
      })
      const { metadata } = await channelState(c, 'keep')
      expect(tagValues(metadata, 'name')).toEqual(['Keep'])
      expect(hasFlag(metadata, 'private')).toBe(false)
    })

    it('deletes a channel event with 9005, and not an event of another channel named in the same request', async () => {
      const { c, admin, alice } = await setup()
      await createChannel(c, admin, 'here')
      await createChannel(c, alice, 'there')
      const mine = await post(c, admin, 'here')
      const theirs = await post(c, alice, 'there')
      const deletion = await deleteEvents(c, admin, 'here', [mine.event.id, theirs.event.id])
      expect(deletion.ok.accepted).toBe(true)
      expect(await reqEvents(c, [{ ids: [mine.event.id] }])).toEqual([])
      expect(idsOf(await reqEvents(c, [{ ids: [theirs.event.id] }]))).toEqual([theirs.event.id])
    })

    it('refuses 9005 from a non-admin with "restricted:" and the event stays served', async () => {
      const { c, admin, alice } = await setup()
      await createChannel(c, admin, 'safe')
      await join(c, alice, 'safe')
      const message = await post(c, admin, 'safe')
      expect((await deleteEvents(c, alice, 'safe', [message.event.id])).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect(idsOf(await reqEvents(c, [{ ids: [message.event.id] }]))).toEqual([message.event.id])
    })

    it('deletes the group (9008): later posts and joins are refused with "restricted:" and its events are no longer served', async () => {
      const { c, admin, alice } = await setup()
      await createChannel(c, admin, 'doomed')
      await join(c, alice, 'doomed')
      const before = await post(c, alice, 'doomed')
      expect(idsOf(await reqEvents(c, [{ '#h': ['doomed'], kinds: [9] }]))).toEqual([before.event.id])
      expect((await deleteChannel(c, admin, 'doomed')).ok.accepted).toBe(true)
      expect((await post(c, alice, 'doomed')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect((await post(c, admin, 'doomed')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect((await join(c, makeKeys(), 'doomed')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect(await reqEvents(c, [{ '#h': ['doomed'] }])).toEqual([])
      expect(await reqEvents(c, [{ ids: [before.event.id] }])).toEqual([])
      const { metadata, admins, members, roles } = await channelState(c, 'doomed')
      expect([metadata, admins, members, roles]).toEqual([undefined, undefined, undefined, undefined])
    })

    it('refuses 9008 from a non-admin with "restricted:" and the channel keeps working', async () => {
      const { c, admin, alice } = await setup()
      await createChannel(c, admin, 'sturdy')
      await join(c, alice, 'sturdy')
      expect((await deleteChannel(c, alice, 'sturdy')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect((await post(c, alice, 'sturdy')).ok.accepted).toBe(true)
    })

    it('refuses moderation of a channel that does not exist with "restricted:"', async () => {
      const { c, admin, alice } = await setup()
      expect((await putUser(c, admin, 'void', alice.pubkey)).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect((await editMetadata(c, admin, 'void', { name: 'x' })).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect((await deleteChannel(c, admin, 'void')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
    })
  })

  describe('relay-signed channel state (39000–39002)', () => {
    it.each([39000, 39001, 39002])('refuses kind %i from anyone but the relay with "restricted:"', async (kind) => {
      const { c, admin } = await setup()
      await createChannel(c, admin, 'real')
      const forged = fresh(admin, {
        kind,
        tags: [
          ['d', 'real'],
          ['name', 'forged'],
          ['p', admin.pubkey, 'admin'],
        ],
      })
      expect(await publish(c, forged)).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect(await reqEvents(c, [{ kinds: [kind], authors: [admin.pubkey] }])).toEqual([])
    })
  })

  describe('community admins and the community’s key moderate every channel', () => {
    const boss = makeKeys()
    const relaySecretKey = randomBytes(32).toString('hex')
    const relayKeys: TestKeys = { secretKey: hexToBytes(relaySecretKey), pubkey: getPublicKey(hexToBytes(relaySecretKey)) }

    async function hive(): Promise<{ r: TestRelay; c: Awaited<ReturnType<typeof client>> }> {
      const r = await relays.start({ relaySecretKey, communities: [{ id: 'hive', hosts: ['hive.test'], admins: [boss.pubkey] }] })
      return { r, c: await client(r, 'hive.test') }
    }

    it('lets a community admin who is not in the channel put users in, remove them, edit, delete events and delete the channel', async () => {
      const { c } = await hive()
      const owner = makeKeys()
      const alice = makeKeys()
      await createChannel(c, owner, 'comb', { flags: ['public', 'restricted'] })
      expect((await putUser(c, boss, 'comb', alice.pubkey)).ok.accepted).toBe(true)
      const message = await post(c, alice, 'comb')
      expect(message.ok.accepted).toBe(true)
      expect((await deleteEvents(c, boss, 'comb', [message.event.id])).ok.accepted).toBe(true)
      expect(await reqEvents(c, [{ ids: [message.event.id] }])).toEqual([])
      expect((await removeUser(c, boss, 'comb', alice.pubkey)).ok.accepted).toBe(true)
      expect((await post(c, alice, 'comb')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect((await editMetadata(c, boss, 'comb', { flags: ['private'] })).ok.accepted).toBe(true)
      expect(hasFlag((await channelState(c, 'comb')).metadata, 'private')).toBe(true)
      expect((await deleteChannel(c, boss, 'comb')).ok.accepted).toBe(true)
      expect((await post(c, owner, 'comb')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
    })

    it('does not make an admin of another community a moderator here: "restricted:"', async () => {
      const { r, c } = await hive()
      const owner = makeKeys()
      const alice = makeKeys()
      await createChannel(c, owner, 'comb')
      // boss is an admin of hive only; in the default community of the same node it is nobody
      const def = await client(r)
      await createChannel(def, owner, 'comb')
      expect((await putUser(def, boss, 'comb', alice.pubkey)).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
    })

    it('lets the community’s key put a user in a channel it is not in; the relay key, which is no community’s, may not', async () => {
      const { r, c } = await hive()
      expect(r.relay.pubkey).toBe(relayKeys.pubkey)
      const hiveKeys = deriveCommunityKey(hexToBytes(relaySecretKey), 'hive')
      expect(r.relay.communityPubkey('hive')).toBe(hiveKeys.pubkey)
      const owner = makeKeys()
      const alice = makeKeys()
      const bob = makeKeys()
      await createChannel(c, owner, 'cell')
      expect((await putUser(c, relayKeys, 'cell', bob.pubkey)).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect((await putUser(c, hiveKeys, 'cell', alice.pubkey)).ok.accepted).toBe(true)
      expect((await post(c, alice, 'cell')).ok.accepted).toBe(true)
    })
  })
})
