import { describe, expect, it } from 'vitest'
import { makeKeys } from '../support/events'
import { channelEvent, channelState, createChannel, editMetadata, join, post, putUser, tagValues } from '../support/nip29-client'
import { client } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'

/** What a channel's 9007 and 9002 set, how 39000 shows it, and the kinds a channel accepts (NIP-29 `supported_kinds`). */
describe('NIP-29 channel metadata', () => {
  const relays = useRelays()

  async function setup() {
    const r = await relays.start()
    return { r, c: await client(r), admin: makeKeys(), alice: makeKeys() }
  }

  /** the flag tags of the channel's 39000, in order */
  const flagsOf = async (c: Awaited<ReturnType<typeof client>>, id: string) =>
    (await channelState(c, id)).metadata?.tags.filter((t) => t.length === 1).map((t) => t[0])
  const kindsOf = async (c: Awaited<ReturnType<typeof client>>, id: string) =>
    (await channelState(c, id)).metadata?.tags.find((t) => t[0] === 'supported_kinds')?.slice(1)

  describe('edit-metadata (kind 9002)', () => {
    it('replaces every flag when it carries one: the flags it leaves out are turned off', async () => {
      const { c, admin } = await setup()
      await createChannel(c, admin, 'all', { flags: ['private', 'restricted', 'closed'] })
      expect(await flagsOf(c, 'all')).toEqual(['private', 'restricted', 'closed'])
      expect((await editMetadata(c, admin, 'all', { flags: ['closed'] })).ok.accepted).toBe(true)
      expect(await flagsOf(c, 'all')).toEqual(['closed'])
      expect((await editMetadata(c, admin, 'all', { flags: ['open'] })).ok.accepted).toBe(true)
      expect(await flagsOf(c, 'all')).toEqual([])
    })

    it('changes only the fields it carries when it carries no flag, as NDK setMetadata sends it: flags and kinds stay', async () => {
      const { c, admin } = await setup()
      await createChannel(c, admin, 'ndk', { name: 'Old', flags: ['private', 'restricted', 'closed'], supportedKinds: [9, 11] })
      const ndk = { name: 'New', about: 'renamed by NDK', picture: 'https://x.test/p.png' }
      expect((await editMetadata(c, admin, 'ndk', ndk)).ok.accepted).toBe(true)
      const { metadata } = await channelState(c, 'ndk')
      expect([tagValues(metadata, 'name'), tagValues(metadata, 'about')]).toEqual([['New'], ['renamed by NDK']])
      expect(await flagsOf(c, 'ndk')).toEqual(['private', 'restricted', 'closed'])
      expect(await kindsOf(c, 'ndk')).toEqual(['9', '11'])
    })

    it('sets supported_kinds without touching the flags, and clears it with a 9002 that states the flags without it', async () => {
      const { c, admin } = await setup()
      await createChannel(c, admin, 'kinds', { flags: ['closed'] })
      expect(await kindsOf(c, 'kinds')).toBeUndefined()
      expect((await editMetadata(c, admin, 'kinds', { supportedKinds: [9] })).ok.accepted).toBe(true)
      expect([await flagsOf(c, 'kinds'), await kindsOf(c, 'kinds')]).toEqual([['closed'], ['9']])
      expect((await editMetadata(c, admin, 'kinds', { flags: ['closed'] })).ok.accepted).toBe(true)
      expect([await flagsOf(c, 'kinds'), await kindsOf(c, 'kinds')]).toEqual([['closed'], undefined])
    })

    it('refuses contradicting flags and an oversized supported_kinds with "invalid:", and 39000 keeps its state', async () => {
      const { c, admin } = await setup()
      await createChannel(c, admin, 'firm', { flags: ['private'] })
      expect((await editMetadata(c, admin, 'firm', { flags: ['private', 'public'] })).ok).toMatchObject({
        accepted: false,
        prefix: 'invalid',
      })
      const many = Array.from({ length: 65 }, (_, i) => i)
      expect((await editMetadata(c, admin, 'firm', { supportedKinds: many })).ok).toMatchObject({ accepted: false, prefix: 'invalid' })
      expect((await editMetadata(c, admin, 'firm', { supportedKinds: many.slice(1) })).ok.accepted).toBe(true)
      expect(await flagsOf(c, 'firm')).toEqual(['private'])
    })

    it('shows a banner in 39000 once set, and none when cleared', async () => {
      const { c, admin } = await setup()
      await createChannel(c, admin, 'flag', { banner: 'https://x.test/banner.png' })
      expect(tagValues((await channelState(c, 'flag')).metadata, 'banner')).toEqual(['https://x.test/banner.png'])
      expect((await editMetadata(c, admin, 'flag', { banner: '' })).ok.accepted).toBe(true)
      expect(tagValues((await channelState(c, 'flag')).metadata, 'banner')).toEqual([])
    })
  })

  describe('supported kinds', () => {
    it('refuses a kind the channel does not list with "blocked:", from its admin too, and accepts a listed one', async () => {
      const { c, admin, alice } = await setup()
      await createChannel(c, admin, 'chat', { supportedKinds: [9, 11] })
      expect((await channelEvent(c, admin, 'chat', 1)).ok).toMatchObject({ accepted: false, prefix: 'blocked' })
      expect((await channelEvent(c, alice, 'chat', 30_023, [['d', 'essay']])).ok).toMatchObject({ accepted: false, prefix: 'blocked' })
      expect((await post(c, alice, 'chat')).ok.accepted).toBe(true)
      expect((await channelEvent(c, alice, 'chat', 11)).ok.accepted).toBe(true)
    })

    it('lets NIP-29 management and user events through a channel that lists no kind at all', async () => {
      const { c, admin, alice } = await setup()
      await createChannel(c, admin, 'av-only', { supportedKinds: [] })
      expect(await kindsOf(c, 'av-only')).toEqual([])
      expect((await post(c, admin, 'av-only')).ok).toMatchObject({ accepted: false, prefix: 'blocked' })
      expect((await join(c, alice, 'av-only')).ok.accepted).toBe(true)
      expect((await putUser(c, admin, 'av-only', makeKeys().pubkey)).ok.accepted).toBe(true)
      expect((await editMetadata(c, admin, 'av-only', { flags: ['restricted'] })).ok.accepted).toBe(true)
      // that 9002 stated the flags without supported_kinds: every kind is accepted again
      expect((await post(c, alice, 'av-only')).ok.accepted).toBe(true)
    })
  })
})
