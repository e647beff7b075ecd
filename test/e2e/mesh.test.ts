import { afterEach, describe, expect, it, vi } from 'vitest'
import type { ConfigInput } from '../../src/infra/config'
import { parseMeshStatus } from '../../src/protocols/mesh/status'
import { keysFromHex, makeKeys } from '../support/events'
import { eventually } from '../support/eventually'
import { httpGet } from '../support/http'
import { metric } from '../support/metrics'
import { channelState, createChannel, createInvite, join, post, putUser, removeUser, tagValues } from '../support/nip29-client'
import { operatorGetHeader } from '../support/nip86-client'
import type { TestRelay } from '../support/relay'
import { client, reqEvents } from '../support/relay-client'
import { useCluster, useRelays } from '../support/relay-fixtures'

/**
 * The relay mesh on three nodes sharing one Redis and one PostgreSQL (in-process instances on ports of their
 * own). A short lease keeps takeovers quick enough for a test.
 */
const sameSet = (a: (string | undefined)[], b: Set<string>) => a.length === b.size && a.every((x) => x !== undefined && b.has(x))

describe('the relay mesh', () => {
  const relays = useRelays()
  const cluster = useCluster(relays)
  const MESH_RENEW_MS = 500
  const MESH: ConfigInput = { mesh: 'on', meshPort: 0, meshLeaseTtlMs: 1_500, meshLeaseRenewMs: MESH_RENEW_MS }

  async function status(r: TestRelay) {
    const auth = operatorGetHeader(keysFromHex(cluster.relaySecretKey), `http://127.0.0.1:${r.port}/mesh/status`)
    const answer = await httpGet(r, '/mesh/status', { Authorization: auth })
    expect(answer.status).toBe(200)
    const parsed = parseMeshStatus(JSON.parse(answer.body))
    if (!parsed.ok) throw new Error(parsed.error)
    return parsed.value
  }

  /** n nodes of a fresh community, each linked to every other */
  async function mesh(n: number) {
    const started = await cluster.nodes(n, MESH)
    for (const node of started.nodes) {
      const linked = await eventually(
        () => status(node),
        (s) => s.peers.filter((p) => p.connected).length >= n - 1,
        'every node linked to the others',
        { timeoutMs: 15_000, intervalMs: 100 },
      )
      expect(linked.peers.filter((p) => p.connected)).toHaveLength(n - 1)
    }
    return started
  }

  it('links every pair of nodes once, and each node names the others in /mesh/status', async () => {
    const { nodes } = await mesh(3)
    const all = await Promise.all(nodes.map(status))
    const runtimes = all.map((s) => s.runtime)
    expect(new Set(runtimes).size).toBe(3)
    for (const s of all) {
      expect(s.draining).toBe(false)
      expect(new Set(s.peers.filter((p) => p.connected).map((p) => p.runtime))).toEqual(new Set(runtimes.filter((r) => r !== s.runtime)))
      expect(s.peers.every((p) => !p.suspect && p.endpoint.startsWith('ws://127.0.0.1:'))).toBe(true)
    }
  })

  it('decides every change of a channel on one owner: changes sent to all three nodes all land, and the final 39002 lists exactly the members', async () => {
    const { host, nodes } = await mesh(3)
    const admin = makeKeys()
    const clients = await Promise.all(nodes.map((r) => client(r, host)))
    expect((await createChannel(clients[0]!, admin, 'hive')).ok.accepted).toBe(true)
    const members = Array.from({ length: 9 }, () => makeKeys().pubkey)
    // three writers at once, one per node, each adding its own three members
    const answers = await Promise.all(
      clients.map(async (c, i) => {
        const out = []
        for (const pubkey of members.slice(3 * i, 3 * i + 3)) out.push((await putUser(c, admin, 'hive', pubkey)).ok)
        return out
      }),
    )
    expect(answers.flat().map((a) => a.accepted)).toEqual(Array(9).fill(true))
    expect((await removeUser(clients[2]!, admin, 'hive', members[0]!)).ok.accepted).toBe(true)
    // a burst runs ahead of the clock: the owner signs the latest state once time has caught up (≤ a few s)
    const want = new Set([admin.pubkey, ...members.slice(1)])
    const state = await eventually(
      () => channelState(clients[1]!, 'hive'),
      (s) => sameSet(tagValues(s.members, 'p'), want),
      'a 39002 listing exactly the members',
      { timeoutMs: 15_000, intervalMs: 100 },
    )
    expect(new Set(tagValues(state.members, 'p'))).toEqual(want)
    // one owner, named alike by every node; its state events carry its generation
    const sessions = (await Promise.all(nodes.map(status))).map((s) => s.sessions.find((x) => x.session === 'channel:hive'))
    const owners = new Set(sessions.map((s) => s?.owner))
    expect(owners.size).toBe(1)
    expect(sessions.filter((s) => s?.local)).toHaveLength(1)
    const generation = state.members?.tags.find((t) => t[0] === 'generation')
    expect(generation?.[2]).toBe([...owners][0])
    expect(Number(generation?.[1])).toBe(sessions[0]?.generation)
  })

  it('decides invite codes on the owner: a single-use code made through one node admits exactly one of two joins racing through the others', async () => {
    const { host, nodes } = await mesh(3)
    const admin = makeKeys()
    const clients = await Promise.all(nodes.map((r) => client(r, host)))
    expect((await createChannel(clients[0]!, admin, 'club', { flags: ['closed'] })).ok.accepted).toBe(true)
    expect((await createInvite(clients[0]!, admin, 'club', 'one-seat')).ok.accepted).toBe(true)
    const [alice, bob] = [makeKeys(), makeKeys()]
    const answers = await Promise.all([join(clients[1]!, alice, 'club', 'one-seat'), join(clients[2]!, bob, 'club', 'one-seat')])
    expect(answers.map((a) => a.ok.accepted).sort()).toEqual([false, true])
    expect(answers.find((a) => !a.ok.accepted)?.ok.prefix).toBe('restricted')
    const admitted = answers[0]!.ok.accepted ? alice : bob
    const state = await eventually(
      () => channelState(clients[0]!, 'club'),
      (s) => tagValues(s.members, 'p').includes(admitted.pubkey),
      'a 39002 listing the one admitted',
      { timeoutMs: 15_000, intervalMs: 100 },
    )
    expect(new Set(tagValues(state.members, 'p'))).toEqual(new Set([admin.pubkey, admitted.pubkey]))
    // neither the code's 9009 nor the joins' 9021 was stored on any node
    expect(await reqEvents(clients[2]!, [{ kinds: [9009, 9021] }])).toEqual([])
  })

  it('hands a channel over when its owner closes: the next owner takes a higher generation at once, and changes keep landing', async () => {
    const { host, nodes } = await mesh(3)
    const admin = makeKeys()
    const first = await client(nodes[0]!, host)
    expect((await createChannel(first, admin, 'relay-race')).ok.accepted).toBe(true)
    const before = (await status(nodes[0]!)).sessions.find((s) => s.session === 'channel:relay-race')
    expect(before).toBeDefined()
    const owner =
      nodes.find((_, i) => i === 0) &&
      (await Promise.all(nodes.map(status))).findIndex((s) => s.sessions.some((x) => x.session === 'channel:relay-race' && x.local))
    expect(owner).toBeGreaterThanOrEqual(0)
    const ownerNode = nodes[owner as number]!
    relays.forget(ownerNode)
    const closing = performance.now()
    await ownerNode.close()
    const survivor = nodes.find((n) => n !== ownerNode)!
    const c = await client(survivor, host)
    const newcomer = makeKeys().pubkey
    const put = await putUser(c, admin, 'relay-race', newcomer)
    const handoverMs = performance.now() - closing
    expect(put.ok.accepted).toBe(true)
    const after = (await status(survivor)).sessions.find((s) => s.session === 'channel:relay-race')
    expect(after?.generation).toBeGreaterThan(before?.generation ?? Infinity)
    expect(tagValues((await channelState(c, 'relay-race')).members, 'p')).toContain(newcomer)
    // planned hand-over: RELEASE lets the next owner in without waiting out the 1.5 s lease
    expect(handoverMs).toBeLessThan(15_000)
  })

  it('answers a join to a closed channel "restricted:" through the owner, and stores it, for an id with capitals and punctuation', async () => {
    const { host, nodes } = await mesh(2)
    const admin = makeKeys()
    const joiner = makeKeys()
    const id = 'Hive:42/{b}'
    const clients = await Promise.all(nodes.map((r) => client(r, host)))
    expect((await createChannel(clients[0]!, admin, id, { flags: ['closed', 'restricted'] })).ok.accepted).toBe(true)
    // the session names the channel in one segment
    const session = 'channel:%48ive%3a42%2f%7bb%7d'
    const sessionsOf = async () => (await Promise.all(nodes.map(status))).map((s) => s.sessions.find((x) => x.session === session))
    const owner = (await sessionsOf()).findIndex((x) => x?.local)
    expect(owner).toBeGreaterThanOrEqual(0)
    // sent to the node that does not own the channel: forwarded, decided by the owner
    const other = clients[1 - owner]!
    const request = await join(other, joiner, id)
    expect(request.ok).toMatchObject({ accepted: false, prefix: 'restricted' })
    expect(request.ok.message).toMatch(/pending/)
    const sessions = await sessionsOf()
    expect(sessions.map((x) => x?.local)).toEqual(nodes.map((_, i) => i === owner))
    expect(new Set(sessions.map((x) => x?.owner)).size).toBe(1)
    const stored = await eventually(
      () => reqEvents(other, [{ kinds: [9021], '#h': [id] }]),
      (events) => events.length === 1,
      'the join request stored for the admins',
      { timeoutMs: 5_000, intervalMs: 100 },
    )
    expect(stored.map((e) => e.id)).toEqual([request.event.id])
    expect(tagValues((await channelState(other, id)).members, 'p')).toEqual([admin.pubkey])
    expect((await post(other, joiner, id)).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
    expect((await putUser(other, admin, id, joiner.pubkey)).ok.accepted).toBe(true)
    expect((await post(other, joiner, id)).ok.accepted).toBe(true)
  })

  describe('when the wall clock jumps', () => {
    afterEach(() => {
      vi.useRealTimers()
    })

    it('keeps every owner, generation and link through a one-hour step: leases run on the monotonic clock', async () => {
      const { host, nodes } = await mesh(3)
      const admin = makeKeys()
      const c = await client(nodes[1]!, host)
      expect((await createChannel(c, admin, 'steady')).ok.accepted).toBe(true)
      const before = (await Promise.all(nodes.map(status))).map((s) => s.sessions.find((x) => x.session === 'channel:steady'))
      const skipped = () => Promise.all(nodes.map((r) => metric(r, 'apiary_mesh_registry_skipped_total')))
      const skippedBefore = await skipped()
      const steppedAt = performance.now()
      // only Date moves (as an NTP step does): timers and performance.now keep real time
      vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true })
      vi.setSystemTime(Date.now() + 3_600_000)
      // a registry reconcile on every node on the stepped clock: each record it reads was issued an hour "ago"
      await eventually(
        skipped,
        (now) => now.every((n, i) => n > skippedBefore[i]!),
        'a registry reconcile on every node, on the stepped clock',
        { timeoutMs: 10_000, intervalMs: 100 },
      )
      // What must not happen: a lease renewal on the stepped clock losing a lease. Nothing shows a renewal that
      // succeeded, so three renewal intervals must have passed.
      await new Promise((r) => setTimeout(r, Math.max(0, steppedAt + 3 * MESH_RENEW_MS - performance.now())))
      expect((await putUser(c, admin, 'steady', makeKeys().pubkey)).ok.accepted).toBe(true)
      const after = await Promise.all(nodes.map(status))
      expect(after.map((s) => s.sessions.find((x) => x.session === 'channel:steady'))).toEqual(before)
      for (const s of after) expect(s.peers.filter((p) => p.connected && !p.suspect)).toHaveLength(2)
    })
  })
})
