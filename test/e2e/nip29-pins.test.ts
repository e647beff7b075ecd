import { describe, expect, it } from 'vitest'
import { makeKeys, type TestKeys } from '../support/events'
import { channelEvent, createChannel, deleteChannel, pinsOf, post, putUser, updatePins } from '../support/nip29-client'
import type { TestRelay } from '../support/relay'
import { auth, client, fresh, nowSeconds, publish, relayUrlOf, reqEvents } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'
import type { TestClient } from '../support/ws-client'

const pinsIn = (e: { tags: string[][] } | undefined) => e?.tags.filter((t) => t[0] !== 'd')

/** NIP-29 pinned events: a channel admin's 9010 and the relay's 39005 that mirrors it. */
describe('NIP-29 pinned events', () => {
  const relays = useRelays()

  async function setup(flags: ('hidden' | 'private')[] = []) {
    const r = await relays.start()
    const c = await client(r)
    const admin = makeKeys()
    const member = makeKeys()
    expect((await createChannel(c, admin, 'hive', { flags })).ok.accepted).toBe(true)
    expect((await putUser(c, admin, 'hive', member.pubkey)).ok.accepted).toBe(true)
    return { r, c, admin, member }
  }

  async function authed(r: TestRelay, keys: TestKeys): Promise<TestClient> {
    const c = await client(r)
    expect((await auth(c, keys, relayUrlOf(r))).accepted).toBe(true)
    return c
  }

  it("publishes a channel admin's list as 39005, signed by the relay, in the order given, and replaces it on the next 9010", async () => {
    const { r, c, admin } = await setup()
    const a = await post(c, admin, 'hive')
    const b = await post(c, admin, 'hive')
    const address = `30023:${admin.pubkey}:notes`
    const first = await updatePins(c, admin, 'hive', [
      ['e', b.event.id],
      ['a', address],
      ['e', a.event.id],
    ])
    expect(first.ok).toMatchObject({ accepted: true })
    const pins = await pinsOf(c, 'hive')
    expect(pins?.pubkey).toBe(r.relay.communityPubkey('default'))
    expect(pins?.tags[0]).toEqual(['d', 'hive'])
    expect(pinsIn(pins)).toEqual([
      ['e', b.event.id],
      ['a', address],
      ['e', a.event.id],
    ])
    expect((await updatePins(c, admin, 'hive', [['e', a.event.id]])).ok.accepted).toBe(true)
    expect(pinsIn(await pinsOf(c, 'hive'))).toEqual([['e', a.event.id]])
    expect((await updatePins(c, admin, 'hive', [])).ok.accepted).toBe(true)
    expect(pinsIn(await pinsOf(c, 'hive'))).toEqual([])
  })

  it('keeps the newer list when an older-dated 9010 arrives after it', async () => {
    const { c, admin } = await setup()
    const a = await post(c, admin, 'hive')
    const b = await post(c, admin, 'hive')
    const now = nowSeconds()
    expect((await channelEvent(c, admin, 'hive', 9010, [['e', b.event.id]], now)).ok.accepted).toBe(true)
    expect((await channelEvent(c, admin, 'hive', 9010, [['e', a.event.id]], now - 10)).ok.accepted).toBe(true)
    expect(pinsIn(await pinsOf(c, 'hive'))).toEqual([['e', b.event.id]])
  })

  it('refuses a member\'s 9010 with "restricted:" and publishes no 39005', async () => {
    const { c, admin, member } = await setup()
    const a = await post(c, admin, 'hive')
    expect((await updatePins(c, member, 'hive', [['e', a.event.id]])).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
    expect(await pinsOf(c, 'hive')).toBeUndefined()
  })

  it('takes 50 pins and refuses 51 with "invalid:"', async () => {
    const { c, admin } = await setup()
    const ids = Array.from({ length: 51 }, (_, i) => i.toString(16).padStart(64, '0'))
    expect(
      (
        await updatePins(
          c,
          admin,
          'hive',
          ids.map((id) => ['e', id]),
        )
      ).ok,
    ).toMatchObject({ accepted: false, prefix: 'invalid' })
    expect(
      (
        await updatePins(
          c,
          admin,
          'hive',
          ids.slice(0, 50).map((id) => ['e', id]),
        )
      ).ok.accepted,
    ).toBe(true)
    expect(pinsIn(await pinsOf(c, 'hive'))).toHaveLength(50)
  })

  it.each([39004, 39005])('refuses a kind %i not signed by the relay with "restricted:"', async (kind) => {
    const { c, admin } = await setup()
    const forged = fresh(admin, { kind, tags: [['d', 'hive']] })
    expect(await publish(c, forged)).toMatchObject({ accepted: false, prefix: 'restricted' })
  })

  it("shows a hidden channel's 39005 to its members only", async () => {
    const { r, c, admin, member } = await setup(['hidden'])
    const a = await post(c, admin, 'hive')
    expect((await updatePins(c, admin, 'hive', [['e', a.event.id]])).ok.accepted).toBe(true)
    expect(pinsIn(await pinsOf(await authed(r, member), 'hive'))).toEqual([['e', a.event.id]])
    expect(await pinsOf(await authed(r, makeKeys()), 'hive')).toBeUndefined()
    expect(await reqEvents(await client(r), [{ kinds: [39005] }])).toEqual([])
  })

  it('removes the 39005 with the channel', async () => {
    const { r, c, admin } = await setup()
    const a = await post(c, admin, 'hive')
    expect((await updatePins(c, admin, 'hive', [['e', a.event.id]])).ok.accepted).toBe(true)
    expect(await pinsOf(c, 'hive')).toBeDefined()
    expect((await deleteChannel(c, admin, 'hive')).ok.accepted).toBe(true)
    // a community admin would see a deleted channel's state if it were still stored
    expect(await reqEvents(await client(r), [{ kinds: [39005], '#d': ['hive'] }])).toEqual([])
  })
})
