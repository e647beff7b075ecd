import { describe, expect, it } from 'vitest'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { makeKeys, type TestKeys } from '../support/events'
import { createChannel, deliveredBefore, editMetadata, hasFlag, post, putUser, subscribe } from '../support/nip29-client'
import { callNip86 } from '../support/nip86-client'
import type { TestRelay } from '../support/relay'
import { auth, client, count, idsOf, publishNew, relayUrlOf, reqEvents } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'
import type { TestClient } from '../support/ws-client'

/**
 * Who reads a channel's relay-signed state (NIP-29 39000–39003). A `private` channel's admin and member lists
 * are its members' business; a `hidden` channel shows none of its state to non-members. Probed as an attacker
 * would: unauthenticated and as an authenticated stranger, by `#d`, by id, by kind, COUNT and live.
 */
describe('channel state a non-member may not read', () => {
  const relays = useRelays()
  const operator = makeKeys()
  const STATE = [39000, 39001, 39002, 39003]

  /** a node with channel `vault` (flags as given) of Alice (admin) with Bob in it; Mallory is in no channel */
  async function setup(flags: ('private' | 'hidden')[]) {
    const r = await relays.start({ operatorPubkeys: [operator.pubkey] })
    const alice = makeKeys()
    const bob = makeKeys()
    const mallory = makeKeys()
    const c = await client(r)
    expect((await createChannel(c, alice, 'vault', { flags })).ok.accepted).toBe(true)
    expect((await putUser(c, alice, 'vault', bob.pubkey)).ok.accepted).toBe(true)
    return { r, c, alice, bob, mallory }
  }

  async function authed(r: TestRelay, keys: TestKeys): Promise<TestClient> {
    const c = await client(r)
    expect((await auth(c, keys, relayUrlOf(r))).accepted).toBe(true)
    return c
  }

  /** the state of `vault` as a member reads it: the ids the probes below must not get */
  async function stateIds(member: TestClient) {
    const events = await reqEvents(member, [{ kinds: STATE, '#d': ['vault'] }])
    return { events, byKind: (k: number) => events.filter((e) => e.kind === k).map((e) => e.id) }
  }

  /** every way of asking for `ids` (their kinds given) without naming the channel's messages */
  async function probe(reader: TestClient, kinds: number[], ids: string[]) {
    return {
      byD: idsOf(await reqEvents(reader, [{ kinds, '#d': ['vault'] }])),
      byIds: idsOf(await reqEvents(reader, [{ ids }])),
      byKinds: idsOf(await reqEvents(reader, [{ kinds }])).filter((id) => ids.includes(id)),
      counted: await count(reader, [{ kinds, '#d': ['vault'] }]),
      countedByIds: await count(reader, [{ ids }]),
    }
  }
  const NOTHING = { byD: [], byIds: [], byKinds: [], counted: 0, countedByIds: 0 }

  /** a public kind 9 (no h tag): published after a state event, its arrival proves the other was not delivered */
  const marker = (c: TestClient, keys: TestKeys) => publishNew(c, keys, { kind: 9 })

  /** the next 39002 of `vault` on `subId` that lists `pubkey` */
  const membersListing = (c: TestClient, subId: string, pubkey: string) =>
    c.next((f) => {
      const e = f[2] as NostrEvent | undefined
      return f[0] === 'EVENT' && f[1] === subId && e?.kind === 39002 && e.tags.some((t) => t[0] === 'p' && t[1] === pubkey)
    })

  describe('a private channel that is not hidden', () => {
    it('serves Alice (admin) and Bob (member) in 39001/39002 to neither an unauthenticated connection nor a stranger', async () => {
      const { r, bob, mallory } = await setup(['private'])
      const { byKind } = await stateIds(await authed(r, bob))
      const lists = [...byKind(39001), ...byKind(39002)]
      expect(lists).toHaveLength(2)
      expect(await probe(await client(r), [39001, 39002], lists)).toEqual(NOTHING)
      expect(await probe(await authed(r, mallory), [39001, 39002], lists)).toEqual(NOTHING)
    })

    it('still serves its 39000 to anyone: clients need it to ask to join', async () => {
      const { r, bob } = await setup(['private'])
      const { byKind } = await stateIds(await authed(r, bob))
      const anon = await client(r)
      expect(idsOf(await reqEvents(anon, [{ kinds: [39000], '#d': ['vault'] }]))).toEqual(byKind(39000))
      expect(await count(anon, [{ kinds: [39000], '#d': ['vault'] }])).toBe(1)
    })

    it('serves the lists to a member, by #d, by id and counted', async () => {
      const { r, alice, bob } = await setup(['private'])
      const member = await authed(r, bob)
      const { events, byKind } = await stateIds(member)
      expect(events.map((e) => e.kind).sort()).toEqual([39000, 39001, 39002, 39003])
      const members = events.find((e) => e.kind === 39002)!
      expect(members.tags.filter((t) => t[0] === 'p').map((t) => t[1])).toEqual(expect.arrayContaining([alice.pubkey, bob.pubkey]))
      expect(idsOf(await reqEvents(member, [{ ids: byKind(39002) }]))).toEqual(byKind(39002))
      expect(await count(member, [{ kinds: [39001, 39002], '#d': ['vault'] }])).toBe(2)
    })

    it('delivers the 39002 carrying Carol’s addition live to a member, and not to an unauthenticated or stranger subscription', async () => {
      const { r, c, alice, bob, mallory } = await setup(['private'])
      const carol = makeKeys()
      const filters = [{ kinds: [39001, 39002] }, { kinds: [9], authors: [alice.pubkey] }]
      const member = await authed(r, bob)
      const anon = await client(r)
      const stranger = await authed(r, mallory)
      const subs = [await subscribe(member, filters), await subscribe(anon, filters), await subscribe(stranger, filters)]
      expect((await putUser(c, alice, 'vault', carol.pubkey)).ok.accepted).toBe(true)
      const listed = (await membersListing(member, subs[0]!.subId, carol.pubkey))[2] as NostrEvent
      const after = await marker(c, alice)
      expect(await deliveredBefore(anon, subs[1]!.subId, listed.id, after.event.id)).toBe(false)
      expect(await deliveredBefore(stranger, subs[2]!.subId, listed.id, after.event.id)).toBe(false)
    })

    it('serves the lists to anyone once the community sets publicMemberLists (NIP-86 setcommunitypolicy)', async () => {
      const { r, bob } = await setup(['private'])
      const { byKind } = await stateIds(await authed(r, bob))
      const answer = await callNip86(r, operator, 'setcommunitypolicy', [{ publicMemberLists: true }])
      expect(answer.json.result).toBe(true)
      const anon = await client(r)
      expect(idsOf(await reqEvents(anon, [{ kinds: [39001, 39002], '#d': ['vault'] }])).sort()).toEqual(
        [...byKind(39001), ...byKind(39002)].sort(),
      )
    })
  })

  describe('a hidden channel', () => {
    it('shows `hidden` in its 39000, and serves a member all of its state', async () => {
      const { r, bob } = await setup(['hidden'])
      const { events } = await stateIds(await authed(r, bob))
      expect(events.map((e) => e.kind).sort()).toEqual([39000, 39001, 39002, 39003])
      expect(
        hasFlag(
          events.find((e) => e.kind === 39000),
          'hidden',
        ),
      ).toBe(true)
    })

    it('serves none of its 39000–39003 to an unauthenticated connection or a stranger, by #d, id, kind or COUNT', async () => {
      const { r, bob, mallory } = await setup(['hidden'])
      const { events } = await stateIds(await authed(r, bob))
      const ids = idsOf(events)
      expect(await probe(await client(r), STATE, ids)).toEqual(NOTHING)
      expect(await probe(await authed(r, mallory), STATE, ids)).toEqual(NOTHING)
    })

    it('delivers a metadata edit live to a member, and not to an unauthenticated or stranger subscription', async () => {
      const { r, c, alice, bob, mallory } = await setup(['hidden'])
      const filters = [{ kinds: STATE }, { kinds: [9], authors: [alice.pubkey] }]
      const member = await authed(r, bob)
      const anon = await client(r)
      const stranger = await authed(r, mallory)
      const subs = [await subscribe(member, filters), await subscribe(anon, filters), await subscribe(stranger, filters)]
      expect((await editMetadata(c, alice, 'vault', { name: 'renamed' })).ok.accepted).toBe(true)
      const renamed = (await member.next((f) => f[0] === 'EVENT' && f[1] === subs[0]!.subId && (f[2] as NostrEvent).kind === 39000))[2]
      const after = await marker(c, alice)
      expect(await deliveredBefore(anon, subs[1]!.subId, (renamed as NostrEvent).id, after.event.id)).toBe(false)
      expect(await deliveredBefore(stranger, subs[2]!.subId, (renamed as NostrEvent).id, after.event.id)).toBe(false)
    })

    it('serves the management events it is built from (9007, 9000) to members only, while its messages stay public', async () => {
      const { r, c, alice, bob, mallory } = await setup(['hidden'])
      const message = await post(c, alice, 'vault')
      const member = await authed(r, bob)
      const managed = (await reqEvents(member, [{ '#h': ['vault'] }])).filter((e) => e.kind !== 9)
      expect(managed.map((e) => e.kind).sort()).toEqual([9000, 9007])
      for (const reader of [await client(r), await authed(r, mallory)]) {
        expect(idsOf(await reqEvents(reader, [{ '#h': ['vault'] }]))).toEqual([message.event.id])
        expect(await reqEvents(reader, [{ ids: idsOf(managed) }])).toEqual([])
        expect(await count(reader, [{ '#h': ['vault'] }])).toBe(1)
      }
    })

    it('is hidden by an edit (9002 `hidden`), stays hidden through a rename, and shown again by `visible`', async () => {
      const { r, c, alice } = await setup([])
      const anon = await client(r)
      const visible = async () => (await reqEvents(anon, [{ kinds: [39000], '#d': ['vault'] }])).length
      expect(await visible()).toBe(1)
      expect((await editMetadata(c, alice, 'vault', { flags: ['hidden'] })).ok.accepted).toBe(true)
      expect(await visible()).toBe(0)
      expect((await editMetadata(c, alice, 'vault', { name: 'renamed' })).ok.accepted).toBe(true)
      expect(await visible()).toBe(0)
      expect((await editMetadata(c, alice, 'vault', { flags: ['visible'] })).ok.accepted).toBe(true)
      const [metadata] = await reqEvents(anon, [{ kinds: [39000], '#d': ['vault'] }])
      expect(hasFlag(metadata, 'hidden')).toBe(false)
      expect(metadata?.tags).toContainEqual(['name', 'renamed'])
    })
  })
})
