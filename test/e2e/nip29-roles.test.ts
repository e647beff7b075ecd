import { describe, expect, it } from 'vitest'
import { MAX_MEMBER_ROLES, MAX_ROLE_NAME_CHARS } from '../../src/protocols/nip29-roles'
import { makeKeys } from '../support/events'
import {
  channelState,
  createChannel,
  createInvite,
  deleteChannel,
  deleteEvents,
  editMetadata,
  post,
  putUser,
  removeUser,
  tagValues,
} from '../support/nip29-client'
import { callNip86 } from '../support/nip86-client'
import { client, idsOf, reqEvents } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'

/** NIP-29 roles in one channel of one node: what 9000 gives, what 39001–39003 show, what a moderator may do. */
describe('NIP-29 channel roles', () => {
  const relays = useRelays()

  /** a channel `room` of `admin`, with `mod` its moderator and `alice` a plain member */
  async function setup(config = {}) {
    const r = await relays.start(config)
    const c = await client(r)
    const admin = makeKeys()
    const mod = makeKeys()
    const alice = makeKeys()
    expect((await createChannel(c, admin, 'room', { flags: ['restricted'] })).ok.accepted).toBe(true)
    expect((await putUser(c, admin, 'room', mod.pubkey, 'moderator')).ok.accepted).toBe(true)
    expect((await putUser(c, admin, 'room', alice.pubkey)).ok.accepted).toBe(true)
    return { r, c, admin, mod, alice }
  }

  const pTags = (e: { tags: string[][] } | undefined) => (e?.tags ?? []).filter((t) => t[0] === 'p')

  describe('what a 9000 gives', () => {
    it('lists in 39001 every member holding admin or moderator with the strongest, and in 39002 every member with its roles', async () => {
      const { c, admin, mod, alice } = await setup()
      const bob = makeKeys()
      expect((await putUser(c, admin, 'room', mod.pubkey, ['gardener', 'moderator'])).ok.accepted).toBe(true)
      expect((await putUser(c, admin, 'room', bob.pubkey, ['gardener'])).ok.accepted).toBe(true)
      const { admins, members } = await channelState(c, 'room')
      expect(pTags(admins)).toEqual([
        ['p', admin.pubkey, 'admin'],
        ['p', mod.pubkey, 'moderator'],
      ])
      expect(pTags(members)).toEqual(
        expect.arrayContaining([
          ['p', admin.pubkey, 'admin'],
          ['p', mod.pubkey, 'gardener', 'moderator'],
          ['p', alice.pubkey],
          ['p', bob.pubkey, 'gardener'],
        ]),
      )
      expect(pTags(members)).toHaveLength(4)
    })

    it('replaces a member’s roles with the next 9000: a moderator put in again without roles leaves 39001 and moderates no more', async () => {
      const { c, admin, mod, alice } = await setup()
      expect(tagValues((await channelState(c, 'room')).admins, 'p')).toContain(mod.pubkey)
      expect((await putUser(c, admin, 'room', mod.pubkey)).ok.accepted).toBe(true)
      expect(tagValues((await channelState(c, 'room')).admins, 'p')).toEqual([admin.pubkey])
      expect((await removeUser(c, mod, 'room', alice.pubkey)).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect((await post(c, alice, 'room')).ok.accepted).toBe(true)
    })

    it(`accepts ${MAX_MEMBER_ROLES} roles of ${MAX_ROLE_NAME_CHARS} characters, and refuses one more role or one more character with "invalid:"`, async () => {
      const { c, admin, alice } = await setup()
      const roles = Array.from({ length: MAX_MEMBER_ROLES }, (_, i) => `${i}`.padEnd(MAX_ROLE_NAME_CHARS, 'r'))
      expect((await putUser(c, admin, 'room', alice.pubkey, roles)).ok.accepted).toBe(true)
      expect((await putUser(c, admin, 'room', alice.pubkey, [...roles, 'one-more'])).ok).toMatchObject({
        accepted: false,
        prefix: 'invalid',
      })
      expect((await putUser(c, admin, 'room', alice.pubkey, ['r'.repeat(MAX_ROLE_NAME_CHARS + 1)])).ok).toMatchObject({
        accepted: false,
        prefix: 'invalid',
      })
      expect(pTags((await channelState(c, 'room')).members)).toContainEqual(['p', alice.pubkey, ...roles])
    })

    it('grants nothing for a role name it does not know: a "gardener" may not delete events nor remove members', async () => {
      const { c, admin, alice } = await setup()
      const gardener = makeKeys()
      expect((await putUser(c, admin, 'room', gardener.pubkey, ['gardener', 'ceo'])).ok.accepted).toBe(true)
      const message = await post(c, alice, 'room')
      expect((await deleteEvents(c, gardener, 'room', [message.event.id])).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect((await removeUser(c, gardener, 'room', alice.pubkey)).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect(idsOf(await reqEvents(c, [{ ids: [message.event.id] }]))).toEqual([message.event.id])
      const { admins, members } = await channelState(c, 'room')
      expect(tagValues(admins, 'p')).not.toContain(gardener.pubkey)
      expect(pTags(members)).toContainEqual(['p', gardener.pubkey, 'gardener', 'ceo'])
    })
  })

  describe('a moderator', () => {
    it('deletes a plain member’s event (9005) and removes a plain member (9001)', async () => {
      const { c, mod, alice } = await setup()
      const message = await post(c, alice, 'room')
      expect((await deleteEvents(c, mod, 'room', [message.event.id])).ok.accepted).toBe(true)
      expect(await reqEvents(c, [{ ids: [message.event.id] }])).toEqual([])
      expect((await removeUser(c, mod, 'room', alice.pubkey)).ok.accepted).toBe(true)
      expect((await post(c, alice, 'room')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
    })

    it('may not remove an admin or another moderator: "restricted:", and both stay members', async () => {
      const { c, admin, mod } = await setup()
      const other = makeKeys()
      expect((await putUser(c, admin, 'room', other.pubkey, 'moderator')).ok.accepted).toBe(true)
      expect((await removeUser(c, mod, 'room', admin.pubkey)).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect((await removeUser(c, mod, 'room', other.pubkey)).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect(tagValues((await channelState(c, 'room')).admins, 'p').sort()).toEqual([admin.pubkey, mod.pubkey, other.pubkey].sort())
    })

    it('deletes with one 9005 its own and the members’ events, and leaves an admin’s and another moderator’s in place', async () => {
      const { c, admin, mod, alice } = await setup()
      const other = makeKeys()
      await putUser(c, admin, 'room', other.pubkey, 'moderator')
      const events = await Promise.all([admin, other, mod, alice].map((k) => post(c, k, 'room')))
      const [byAdmin, byOther, own, byAlice] = events.map((e) => e.event.id) as [string, string, string, string]
      expect((await deleteEvents(c, mod, 'room', [byAdmin, byOther, own, byAlice])).ok.accepted).toBe(true)
      expect(idsOf(await reqEvents(c, [{ ids: [byAdmin, byOther, own, byAlice] }])).sort()).toEqual([byAdmin, byOther].sort())
    })

    it('may not put users in, edit metadata, create invite codes or delete the channel: "restricted:" each', async () => {
      const { c, mod } = await setup()
      expect((await putUser(c, mod, 'room', makeKeys().pubkey)).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect((await putUser(c, mod, 'room', mod.pubkey, 'admin')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect((await editMetadata(c, mod, 'room', { name: 'mine' })).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect((await createInvite(c, mod, 'room', 'sneaky')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect((await deleteChannel(c, mod, 'room')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
      expect(tagValues((await channelState(c, 'room')).metadata, 'name')).toEqual(['room'])
    })
  })

  describe('the relay’s roles (39003)', () => {
    it('publishes 39003, signed by the relay, naming admin and moderator with what each may do, when the channel is created', async () => {
      const { r, c } = await setup()
      const { roles } = await channelState(c, 'room')
      expect(roles?.pubkey).toBe(r.relay.communityPubkey('default'))
      expect(tagValues(roles, 'd')).toEqual(['room'])
      expect(roles?.tags.filter((t) => t[0] === 'role').map((t) => [t[1], (t[2] ?? '').length > 0])).toEqual([
        ['admin', true],
        ['moderator', true],
      ])
    })

    it('re-signs no 39003 on later changes while the stored one is current', async () => {
      const { c, admin } = await setup()
      const first = (await channelState(c, 'room')).roles
      await putUser(c, admin, 'room', makeKeys().pubkey)
      await editMetadata(c, admin, 'room', { name: 'renamed' })
      expect(tagValues((await channelState(c, 'room')).metadata, 'name')).toEqual(['renamed'])
      expect((await channelState(c, 'room')).roles?.id).toBe(first?.id)
    })

    it('signs a 39003 for a channel that has none at its next change', async () => {
      const operator = makeKeys()
      const { r, c, admin } = await setup({ operatorPubkeys: [operator.pubkey] })
      // a channel from before 39003: the operator takes its roles event away (NIP-86 banevent leaves no tombstone)
      const before = (await channelState(c, 'room')).roles
      expect((await callNip86(r, operator, 'banevent', [before!.id, 'test'])).json.result).toBe(true)
      expect((await channelState(c, 'room')).roles).toBeUndefined()
      expect((await putUser(c, admin, 'room', makeKeys().pubkey)).ok.accepted).toBe(true)
      const after = (await channelState(c, 'room')).roles
      expect(after?.pubkey).toBe(r.relay.communityPubkey('default'))
      expect(after?.tags.filter((t) => t[0] === 'role').map((t) => t[1])).toEqual(['admin', 'moderator'])
    })
  })
})
