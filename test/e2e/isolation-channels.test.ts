import { describe, expect, it } from 'vitest'
import { makeKeys, type TestKeys } from '../support/events'
import {
  channelState,
  createChannel,
  deleteChannel,
  delivered,
  deliveredBefore,
  editMetadata,
  hasFlag,
  join,
  post,
  putUser,
  subscribe,
  tagValues,
} from '../support/nip29-client'
import type { TestRelay } from '../support/relay'
import { auth, client, count, idsOf, nowSeconds, publishNew, relayUrlOf, reqEvents } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'
import type { TestClient } from '../support/ws-client'

const BETA = { communities: [{ id: 'beta', hosts: ['beta.test'] }] }

/**
 * Two communities on one node (`default` on 127.0.0.1, `beta` on beta.test), each with a channel `general`
 * of its own: the same id names two channels that share nothing.
 */
describe('channels of communities on one relay are isolated', () => {
  const relays = useRelays()

  async function authed(r: TestRelay, keys: TestKeys, host?: string): Promise<TestClient> {
    const c = await client(r, host)
    expect((await auth(c, keys, relayUrlOf(r, host))).accepted).toBe(true)
    return c
  }

  /** `general` created by alice in default (private, closed) and by bob in beta (public, open) */
  async function setup() {
    const r = await relays.start(BETA)
    const alice = makeKeys()
    const bob = makeKeys()
    const def = await client(r)
    const beta = await client(r, 'beta.test')
    expect(
      (await createChannel(def, alice, 'general', { name: 'Default general', flags: ['private', 'restricted', 'closed'] })).ok.accepted,
    ).toBe(true)
    expect((await createChannel(beta, bob, 'general', { name: 'Beta general', flags: ['public', 'restricted', 'open'] })).ok.accepted).toBe(
      true,
    )
    return { r, def, beta, alice, bob }
  }

  it('lets each community create a channel of the same id, each described by its own 39000–39002 signed by its own key', async () => {
    const { r, beta, alice, bob } = await setup()
    // default's channel is private: its admin list is read by a member
    const inDefault = await channelState(await authed(r, alice), 'general')
    const inBeta = await channelState(beta, 'general')
    expect(tagValues(inDefault.metadata, 'name')).toEqual(['Default general'])
    expect(tagValues(inBeta.metadata, 'name')).toEqual(['Beta general'])
    expect([hasFlag(inDefault.metadata, 'private'), hasFlag(inBeta.metadata, 'private')]).toEqual([true, false])
    expect([hasFlag(inDefault.metadata, 'closed'), hasFlag(inBeta.metadata, 'closed')]).toEqual([true, false])
    expect(tagValues(inDefault.admins, 'p')).toEqual([alice.pubkey])
    expect(tagValues(inBeta.admins, 'p')).toEqual([bob.pubkey])
    // one relay, two identities: nothing the relay signs links one community to the other
    expect(inDefault.metadata?.pubkey).toBe(r.relay.communityPubkey('default'))
    expect(inBeta.metadata?.pubkey).toBe(r.relay.communityPubkey('beta'))
    expect(new Set([inDefault.metadata?.pubkey, inBeta.metadata?.pubkey, r.relay.pubkey]).size).toBe(3)
    expect(inDefault.metadata?.id).not.toBe(inBeta.metadata?.id)
  })

  it('changes only its own community’s channel on edit-metadata', async () => {
    const { def, beta, alice } = await setup()
    expect((await editMetadata(def, alice, 'general', { name: 'Renamed', flags: ['public'] })).ok.accepted).toBe(true)
    const inBeta = (await channelState(beta, 'general')).metadata
    expect(tagValues(inBeta, 'name')).toEqual(['Beta general'])
    expect(tagValues((await channelState(def, 'general')).metadata, 'name')).toEqual(['Renamed'])
  })

  it('keeps membership per community: a member of beta’s channel is refused "restricted:" in default’s', async () => {
    const { r, def, beta, alice } = await setup()
    const carol = makeKeys()
    expect((await join(beta, carol, 'general')).ok.accepted).toBe(true)
    expect((await post(beta, carol, 'general')).ok.accepted).toBe(true)
    expect((await post(def, carol, 'general')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
    const { members } = await channelState(await authed(r, alice), 'general')
    expect(tagValues(members, 'p')).toEqual([alice.pubkey])
  })

  it('gives a channel admin no rights over the channel of the same id in the other community', async () => {
    const { def, beta, alice, bob } = await setup()
    const carol = makeKeys()
    expect((await putUser(beta, alice, 'general', carol.pubkey)).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
    expect((await putUser(def, bob, 'general', carol.pubkey)).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
    expect((await deleteChannel(def, bob, 'general')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
    expect((await post(def, alice, 'general')).ok.accepted).toBe(true)
  })

  it('keeps a channel’s events in its community: an #h REQ or COUNT sees only its own community’s messages', async () => {
    const { r, def, beta, alice, bob } = await setup()
    const inDefault = await post(def, alice, 'general')
    const inBeta = await post(beta, bob, 'general')
    const filter = { '#h': ['general'], kinds: [9] }
    expect(idsOf(await reqEvents(await authed(r, alice), [filter]))).toEqual([inDefault.event.id])
    expect(idsOf(await reqEvents(await authed(r, alice, 'beta.test'), [filter]))).toEqual([inBeta.event.id])
    expect(await count(await authed(r, alice, 'beta.test'), [filter])).toBe(1)
    expect(await count(await authed(r, alice), [filter])).toBe(1)
  })

  it('applies each channel’s own privacy: beta’s public general is read anonymously, default’s private one is not, stored or live', async () => {
    const { r, def, beta, alice, bob } = await setup()
    const inDefault = await post(def, alice, 'general')
    const inBeta = await post(beta, bob, 'general')
    const anonDefault = await client(r)
    const anonBeta = await client(r, 'beta.test')
    expect(await reqEvents(anonDefault, [{ '#h': ['general'] }])).toEqual([])
    expect(idsOf(await reqEvents(anonBeta, [{ '#h': ['general'], kinds: [9] }]))).toEqual([inBeta.event.id])
    expect(await reqEvents(anonBeta, [{ ids: [inDefault.event.id] }])).toEqual([])
    const liveDefault = await subscribe(anonDefault, [{ kinds: [9] }])
    const liveBeta = await subscribe(anonBeta, [{ kinds: [9] }])
    const secret = await post(def, alice, 'general')
    const marker = await publishNew(def, alice, { kind: 9 })
    expect(await deliveredBefore(anonDefault, liveDefault.subId, secret.event.id, marker.event.id)).toBe(false)
    const open = await post(beta, bob, 'general')
    await delivered(anonBeta, liveBeta.subId, open.event.id)
  })

  it('makes a pubkey a member where it was put in only: it reads a private channel of that id in one community and not in the other', async () => {
    const r = await relays.start(BETA)
    const [alice, bob, carol] = [makeKeys(), makeKeys(), makeKeys()]
    const def = await client(r)
    const beta = await client(r, 'beta.test')
    await createChannel(def, alice, 'inner', { flags: ['private', 'restricted'] })
    await createChannel(beta, bob, 'inner', { flags: ['private', 'restricted'] })
    expect((await putUser(def, alice, 'inner', carol.pubkey)).ok.accepted).toBe(true)
    const inDefault = await post(def, alice, 'inner')
    const inBeta = await post(beta, bob, 'inner')
    expect(idsOf(await reqEvents(await authed(r, carol), [{ '#h': ['inner'], kinds: [9] }]))).toEqual([inDefault.event.id])
    const carolInBeta = await authed(r, carol, 'beta.test')
    expect(await reqEvents(carolInBeta, [{ '#h': ['inner'] }])).toEqual([])
    expect(await reqEvents(carolInBeta, [{ ids: [inBeta.event.id] }])).toEqual([])
    expect((await post(beta, carol, 'inner')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
    // bob, a member in beta, sees beta's
    expect(idsOf(await reqEvents(await authed(r, bob, 'beta.test'), [{ '#h': ['inner'], kinds: [9] }]))).toEqual([inBeta.event.id])
  })

  it('deletes a channel in one community only, and the other may still create that id', async () => {
    const { r, def, beta, alice, bob } = await setup()
    const kept = await post(beta, bob, 'general')
    expect((await deleteChannel(def, alice, 'general')).ok.accepted).toBe(true)
    expect((await post(def, alice, 'general')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
    expect((await post(beta, bob, 'general')).ok.accepted).toBe(true)
    expect(idsOf(await reqEvents(await client(r, 'beta.test'), [{ ids: [kept.event.id] }]))).toEqual([kept.event.id])
    expect(tagValues((await channelState(beta, 'general')).metadata, 'name')).toEqual(['Beta general'])
    // "blocked:" (a deleted id) is per community too
    expect((await createChannel(def, alice, 'archive')).ok.accepted).toBe(true)
    expect((await deleteChannel(def, alice, 'archive')).ok.accepted).toBe(true)
    expect((await createChannel(def, alice, 'archive')).ok).toMatchObject({ accepted: false, prefix: 'blocked' })
    expect((await createChannel(beta, bob, 'archive')).ok.accepted).toBe(true)
  })

  it('keeps addressable events of one author with the same d tag separately per community', async () => {
    const r = await relays.start(BETA)
    const author = makeKeys()
    const def = await client(r)
    const beta = await client(r, 'beta.test')
    const now = nowSeconds()
    const newer = await publishNew(def, author, { kind: 30023, tags: [['d', 'notes']], content: 'default version', created_at: now })
    // older than default's: in one store it would be refused as superseded, here it is beta's only version
    const older = await publishNew(beta, author, { kind: 30023, tags: [['d', 'notes']], content: 'beta version', created_at: now - 60 })
    const filter = { kinds: [30023], authors: [author.pubkey], '#d': ['notes'] }
    expect(idsOf(await reqEvents(def, [filter]))).toEqual([newer.event.id])
    expect(idsOf(await reqEvents(beta, [filter]))).toEqual([older.event.id])
    // a newer version in beta replaces beta's only
    const replacement = await publishNew(beta, author, { kind: 30023, tags: [['d', 'notes']], content: 'beta v2', created_at: now + 1 })
    expect(idsOf(await reqEvents(beta, [filter]))).toEqual([replacement.event.id])
    expect(idsOf(await reqEvents(def, [filter]))).toEqual([newer.event.id])
  })
})
