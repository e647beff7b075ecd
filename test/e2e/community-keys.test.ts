import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ConfigInput } from '../../src/infra/config'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { keysFromHex, makeKeys } from '../support/events'
import { eventually } from '../support/eventually'
import { httpGet } from '../support/http'
import { channelState, createChannel, join, tagValues } from '../support/nip29-client'
import { createTestDatabase, type TestDatabase } from '../support/postgres'
import type { TestRelay } from '../support/relay'
import { client, reqEvents } from '../support/relay-client'
import { REDIS_URL, useCluster, useRelays } from '../support/relay-fixtures'

const NOSTR_JSON = { Accept: 'application/nostr+json' }
const selfOn = async (r: TestRelay, host: string) =>
  (JSON.parse((await httpGet(r, '/', { ...NOSTR_JSON, Host: `${host}:${r.port}` })).body) as { self: string }).self
const newCommunity = () => {
  const id = `c-${randomBytes(5).toString('hex')}`
  return { id, host: `${id}.test` }
}

describe('a community’s own key', () => {
  const relays = useRelays()

  it('is the key its config names: it signs the channel state and is NIP-11 self on its hosts', async () => {
    const secretKey = randomBytes(32).toString('hex')
    const own = keysFromHex(secretKey)
    const { id, host } = newCommunity()
    const r = await relays.start({ communities: [{ id, hosts: [host], secretKey }] })
    expect(r.relay.communityPubkey(id)).toBe(own.pubkey)
    expect(await selfOn(r, host)).toBe(own.pubkey)
    const c = await client(r, host)
    expect((await createChannel(c, makeKeys(), 'moved', { name: 'Moved here' })).ok.accepted).toBe(true)
    const { metadata, members } = await channelState(c, 'moved')
    expect([metadata?.pubkey, members?.pubkey]).toEqual([own.pubkey, own.pubkey])
  })
})

describe('a community’s key across the nodes of a cluster', () => {
  const relays = useRelays()
  const cluster = useCluster(relays)

  it('is the same on every node: state one node signs is the state another node’s NIP-11 names', async () => {
    const { id, host, nodes } = await cluster.nodes(2)
    const [a, b] = nodes as [TestRelay, TestRelay]
    expect(await selfOn(a, host)).toBe(await selfOn(b, host))
    expect(await selfOn(a, host)).not.toBe(a.relay.pubkey)
    const owner = makeKeys()
    expect((await createChannel(await client(a, host), owner, 'shared')).ok.accepted).toBe(true)
    const { metadata } = await channelState(await client(b, host), 'shared')
    expect(metadata?.pubkey).toBe(await selfOn(b, host))
    expect(b.relay.communityPubkey(id)).toBe(metadata?.pubkey)
  })
})

let db: TestDatabase | undefined
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => {
  await db?.drop()
})

const backends: [string, () => ConfigInput][] = [
  ['SQLite', () => ({})],
  ['PostgreSQL', () => ({ databaseUrl: (db as TestDatabase).url, redisUrl: REDIS_URL })],
]

describe.each(backends)('channel state stored before communities had their own keys (%s)', (_, backend) => {
  const relays = useRelays()

  it('is signed again with the community’s key on start, and the versions the relay key signed are deleted', async () => {
    const relaySecretKey = randomBytes(32).toString('hex')
    const { id, host } = newCommunity()
    const owner = makeKeys()
    const member = makeKeys()
    // the relay key named as the community's: what every version before per-community keys signed with
    const before = await relays.start({ ...backend(), relaySecretKey, communities: [{ id, hosts: [host], secretKey: relaySecretKey }] })
    const c = await client(before, host)
    await createChannel(c, owner, 'old-room', { name: 'Old room', flags: ['open'] })
    await join(c, member, 'old-room')
    const old = await reqEvents(c, [{ kinds: [39000, 39001, 39002], '#d': ['old-room'] }])
    expect(old.map((e) => e.pubkey)).toEqual([before.relay.pubkey, before.relay.pubkey, before.relay.pubkey])
    c.close()
    relays.forget(before)
    await before.close({ keepData: true })

    const after = await relays.start({ ...backend(), relaySecretKey, communities: [{ id, hosts: [host] }] }, before.dataDir)
    const own = after.relay.communityPubkey(id)
    expect(own).not.toBe(after.relay.pubkey)
    const reader = await client(after, host)
    const state = await eventually(
      () => reqEvents(reader, [{ kinds: [39000, 39001, 39002], '#d': ['old-room'] }]),
      (events: NostrEvent[]) => events.length === 3 && events.every((e) => e.pubkey === own),
      'only the community’s own key’s state stored',
    )
    const byKind = (kind: number) => state.find((e) => e.kind === kind)
    expect(tagValues(byKind(39000), 'name')).toEqual(['Old room'])
    expect(tagValues(byKind(39001), 'p')).toEqual([owner.pubkey])
    expect(tagValues(byKind(39002), 'p').sort()).toEqual([owner.pubkey, member.pubkey].sort())
    expect(await reqEvents(reader, [{ ids: old.map((e) => e.id) }])).toEqual([])
    expect(await selfOn(after, host)).toBe(own)
  })
})
