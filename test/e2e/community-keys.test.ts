import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { keysFromHex, makeKeys } from '../support/events'
import { httpGet } from '../support/http'
import { channelState, createChannel } from '../support/nip29-client'
import type { TestRelay } from '../support/relay'
import { client } from '../support/relay-client'
import { useCluster, useRelays } from '../support/relay-fixtures'

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
