import { describe, expect, it } from 'vitest'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { makeKeys, type SignedEvent, signEvent, type TestKeys } from '../support/events'
import { eventually } from '../support/eventually'
import type { TestRelay } from '../support/relay'
import { auth, client, idsOf, publish, relayUrlOf, reqEvents } from '../support/relay-client'
import { useCluster, useRelays } from '../support/relay-fixtures'
import type { TestClient } from '../support/ws-client'

const BETA = { communities: [{ id: 'beta', hosts: ['beta.test'] }] }

const heartbeat = (keys: TestKeys, status = `online ${Math.random()}`): SignedEvent => signEvent(keys, { kind: 20001, content: status })
const presenceOf = async (c: TestClient, pubkey: string): Promise<NostrEvent[]> => reqEvents(c, [{ kinds: [20001], authors: [pubkey] }])

/** A connection authenticated as `keys` (presence is held only by its author's AUTHenticated connections). */
async function authed(r: TestRelay, keys: TestKeys, host?: string): Promise<TestClient> {
  const c = await client(r, host)
  expect((await auth(c, keys, relayUrlOf(r, host))).accepted).toBe(true)
  return c
}

describe('presence (kind 20001) on one node', () => {
  const relays = useRelays()

  it('sets presence from a heartbeat and answers a REQ for its author with the signed event', async () => {
    const r = await relays.start()
    const keys = makeKeys()
    const c = await authed(r, keys)
    const hb = heartbeat(keys, 'writing tests')
    expect(await publish(c, hb)).toEqual({ accepted: true, message: '', prefix: undefined })
    const reader = await client(r)
    expect(await presenceOf(reader, keys.pubkey)).toEqual([hb.event])
    // the latest heartbeat wins; no authors ⇒ no presence (the community is never scanned)
    const next = heartbeat(keys, 'away')
    await publish(c, next)
    expect(idsOf(await presenceOf(reader, keys.pubkey))).toEqual([next.event.id])
    expect(await reqEvents(reader, [{ kinds: [20001] }])).toEqual([])
    // the filter's other fields still apply
    expect(await reqEvents(reader, [{ kinds: [20001], authors: [keys.pubkey], since: next.event.created_at + 10 }])).toEqual([])
  })

  it('serves a heartbeat naming a private channel (h tag) only to readers of that channel', async () => {
    const r = await relays.start()
    const [owner, member, stranger] = [makeKeys(), makeKeys(), makeKeys()]
    const admin = await authed(r, owner)
    expect((await publish(admin, signEvent(owner, { kind: 9007, tags: [['h', 'war-room'], ['private']] }))).accepted).toBe(true)
    expect(
      (
        await publish(
          admin,
          signEvent(owner, {
            kind: 9000,
            tags: [
              ['h', 'war-room'],
              ['p', member.pubkey],
            ],
          }),
        )
      ).accepted,
    ).toBe(true)
    const m = await authed(r, member)
    const inRoom = signEvent(member, { kind: 20001, content: 'in the war room', tags: [['h', 'war-room']] })
    expect((await publish(m, inRoom)).accepted).toBe(true)
    expect(idsOf(await presenceOf(admin, member.pubkey))).toEqual([inRoom.event.id])
    expect(idsOf(await presenceOf(m, member.pubkey))).toEqual([inRoom.event.id])
    expect(await presenceOf(await authed(r, stranger), member.pubkey)).toEqual([])
    expect(await presenceOf(await client(r), member.pubkey)).toEqual([])
  })

  it('accepts a status of 128 bytes and refuses 129 with invalid:', async () => {
    const r = await relays.start()
    const keys = makeKeys()
    const c = await authed(r, keys)
    expect((await publish(c, heartbeat(keys, 'é'.repeat(64)))).accepted).toBe(true)
    expect(await publish(c, heartbeat(keys, `${'é'.repeat(64)}x`))).toMatchObject({ accepted: false, prefix: 'invalid' })
  })

  it('refuses a heartbeat from a connection not authenticated as its author with auth-required:', async () => {
    const r = await relays.start()
    const keys = makeKeys()
    expect(await publish(await client(r), heartbeat(keys))).toMatchObject({ accepted: false, prefix: 'auth-required' })
    expect(await publish(await authed(r, makeKeys()), heartbeat(keys))).toMatchObject({ accepted: false, prefix: 'auth-required' })
    expect(await presenceOf(await client(r), keys.pubkey)).toEqual([])
  })

  it('forgets a presence 3 heartbeats after the last one (presenceHeartbeatSeconds: 1)', async () => {
    const r = await relays.start({ presenceHeartbeatSeconds: 1 })
    const keys = makeKeys()
    const c = await authed(r, keys)
    await publish(c, heartbeat(keys))
    const reader = await client(r)
    expect(await presenceOf(reader, keys.pubkey)).toHaveLength(1)
    const started = performance.now()
    expect(
      await eventually(
        () => presenceOf(reader, keys.pubkey),
        (e) => e.length === 0,
        'the presence forgotten',
        { intervalMs: 100 },
      ),
    ).toEqual([])
    expect(performance.now() - started).toBeGreaterThan(1_500)
  })

  it('keeps a presence while one connection of its pubkey is open, and clears it when the last closes', async () => {
    const r = await relays.start()
    const keys = makeKeys()
    const [one, two] = [await authed(r, keys), await authed(r, keys)]
    await publish(one, heartbeat(keys))
    await publish(two, heartbeat(keys))
    const reader = await client(r)
    one.close()
    await one.closed
    // the close is processed by the community in order; give it a moment, then presence must still be there
    await new Promise((res) => setTimeout(res, 300))
    expect(await presenceOf(reader, keys.pubkey)).toHaveLength(1)
    two.close()
    expect(
      await eventually(
        () => presenceOf(reader, keys.pubkey),
        (e) => e.length === 0,
        'the presence cleared',
        { timeoutMs: 3_000, intervalMs: 100 },
      ),
    ).toEqual([])
  })

  it('never shows a presence in another community', async () => {
    const r = await relays.start(BETA)
    const keys = makeKeys()
    const c = await authed(r, keys)
    await publish(c, heartbeat(keys, 'in default'))
    expect(await presenceOf(await client(r, 'beta.test'), keys.pubkey)).toEqual([])
    // a connection of the same pubkey closing in beta leaves the default community's presence alone
    const inBeta = await authed(r, keys, 'beta.test')
    await publish(inBeta, heartbeat(keys, 'in beta'))
    inBeta.close()
    await inBeta.closed
    await new Promise((res) => setTimeout(res, 300))
    expect((await presenceOf(await client(r), keys.pubkey)).map((e) => e.content)).toEqual(['in default'])
    expect(await presenceOf(await client(r, 'beta.test'), keys.pubkey)).toEqual([])
  })
})

describe('presence across two nodes of a cluster', () => {
  const relays = useRelays()
  const cluster = useCluster(relays)
  async function twoNodes(extra = {}) {
    const {
      host,
      nodes: [a, b],
    } = await cluster.nodes(2, extra)
    return { host, a: a!, b: b! }
  }

  it('forgets on B a presence set on A 3 heartbeats after the last one, while its socket stays open', async () => {
    const { host, a, b } = await twoNodes({ presenceHeartbeatSeconds: 1 })
    const keys = makeKeys()
    const onA = await authed(a, keys, host)
    expect((await publish(onA, heartbeat(keys, 'here'))).accepted).toBe(true)
    const readerB = await client(b, host)
    expect((await presenceOf(readerB, keys.pubkey)).map((e) => e.content)).toEqual(['here'])
    const started = performance.now()
    expect(
      await eventually(
        () => presenceOf(readerB, keys.pubkey),
        (e) => e.length === 0,
        'the presence forgotten on B',
        { timeoutMs: 10_000, intervalMs: 100 },
      ),
    ).toEqual([])
    // the Redis key's TTL is 3 × heartbeat: it can't have gone much before that
    expect(performance.now() - started).toBeGreaterThan(1_500)
  })

  it('shows a heartbeat on A to a REQ on B, and clears it only when the last connection on either node closes', async () => {
    const { host, a, b } = await twoNodes()
    const keys = makeKeys()
    const [onA, onB] = [await authed(a, keys, host), await authed(b, keys, host)]
    const hb = heartbeat(keys, 'on A')
    expect((await publish(onA, hb)).accepted).toBe(true)
    const readerB = await client(b, host)
    expect(await presenceOf(readerB, keys.pubkey)).toEqual([hb.event])
    await publish(onB, heartbeat(keys, 'on B'))
    expect((await presenceOf(readerB, keys.pubkey)).map((e) => e.content)).toEqual(['on B'])
    onB.close()
    await onB.closed
    await new Promise((res) => setTimeout(res, 300))
    // A still holds the presence: B's close must not clear it cluster-wide
    expect(await presenceOf(readerB, keys.pubkey)).toHaveLength(1)
    onA.close()
    expect(
      await eventually(
        () => presenceOf(readerB, keys.pubkey),
        (e) => e.length === 0,
        'the presence cleared on B',
        { timeoutMs: 3_000, intervalMs: 100 },
      ),
    ).toEqual([])
  })
})
