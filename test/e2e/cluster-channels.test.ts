import postgres from 'postgres'
import { describe, expect, it } from 'vitest'
import { openPostgresCommunityStore } from '../../src/infra/store/postgres/postgres-community-store'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { prefixOf } from '../../src/protocols/reasons'
import { makeKeys, type TestKeys } from '../support/events'
import {
  authAsAgent,
  createChannel,
  createInvite,
  delivered,
  deliveredBefore,
  editMetadata,
  join,
  post,
  putUser,
  removeUser,
  subscribe,
} from '../support/nip29-client'
import { callNip86 } from '../support/nip86-client'
import type { TestRelay } from '../support/relay'
import { auth, client, count, fresh, idsOf, publish, publishNew, relayUrlOf, reqEvents } from '../support/relay-client'
import { useCluster, useRelays } from '../support/relay-fixtures'
import type { TestClient } from '../support/ws-client'

/**
 * Private channels and agent bans across two nodes on one Redis and one PostgreSQL. A short membership
 * cache TTL makes the "broadcast lost" bound observable within a test.
 */
describe('channels on a cluster of nodes', () => {
  const relays = useRelays()
  const cluster = useCluster(relays)
  const operator = makeKeys()
  const TTL_MS = 800
  /** two nodes serving a fresh community of the test's own */
  async function nodes(accessCacheTtlMs = TTL_MS) {
    const { id, host, nodes: started } = await cluster.nodes(2, { accessCacheTtlMs, operatorPubkeys: [operator.pubkey] })
    return { id, host, a: started[0]!, b: started[1]! }
  }

  async function authed(r: TestRelay, host: string, keys: TestKeys): Promise<TestClient> {
    const c = await client(r, host)
    expect((await auth(c, keys, relayUrlOf(r, host))).accepted).toBe(true)
    return c
  }

  /** two nodes, a private channel `vault` created on A by `admin` with `member` in it */
  async function setup(accessCacheTtlMs = TTL_MS) {
    const { id, host, a, b } = await nodes(accessCacheTtlMs)
    const admin = makeKeys()
    const member = makeKeys()
    const outsider = makeKeys()
    const onA = await client(a, host)
    expect((await createChannel(onA, admin, 'vault', { flags: ['private'] })).ok.accepted).toBe(true)
    expect((await putUser(onA, admin, 'vault', member.pubkey)).ok.accepted).toBe(true)
    return { id, host, a, b, onA, admin, member, outsider }
  }

  /** a public kind 9 (no h tag): published after a private one, its arrival proves the other was not delivered */
  const marker = (c: TestClient, keys: TestKeys) => publishNew(c, keys, { kind: 9 })

  describe('private confinement', () => {
    it('delivers an event published on A live to a member on B, and not to a non-member or an anonymous socket on B', async () => {
      const { host, b, onA, admin, member, outsider } = await setup()
      const filter = { kinds: [9], authors: [admin.pubkey] }
      const memberOnB = await authed(b, host, member)
      const outsiderOnB = await authed(b, host, outsider)
      const anonOnB = await client(b, host)
      const subs = [await subscribe(memberOnB, [filter]), await subscribe(outsiderOnB, [filter]), await subscribe(anonOnB, [filter])]
      const secret = await post(onA, admin, 'vault')
      expect(secret.ok.accepted).toBe(true)
      const after = await marker(onA, admin)
      expect(await deliveredBefore(memberOnB, subs[0]!.subId, secret.event.id, after.event.id)).toBe(true)
      expect(await deliveredBefore(outsiderOnB, subs[1]!.subId, secret.event.id, after.event.id)).toBe(false)
      expect(await deliveredBefore(anonOnB, subs[2]!.subId, secret.event.id, after.event.id)).toBe(false)
    })

    it('serves and counts on B only what the connection may read of events stored through A', async () => {
      const { host, b, onA, admin, member, outsider } = await setup()
      const open = await marker(onA, admin)
      const secret = await post(onA, admin, 'vault')
      const filter = { kinds: [9], authors: [admin.pubkey] }
      const memberOnB = await authed(b, host, member)
      const outsiderOnB = await authed(b, host, outsider)
      expect(idsOf(await reqEvents(memberOnB, [filter])).sort()).toEqual([open.event.id, secret.event.id].sort())
      expect(idsOf(await reqEvents(outsiderOnB, [filter]))).toEqual([open.event.id])
      expect(await count(memberOnB, [filter])).toBe(2)
      expect(await count(outsiderOnB, [filter])).toBe(1)
      expect(await count(await client(b, host), [filter])).toBe(1)
    })

    it('delivers on B to a member put in through A right after the 9000 is answered', async () => {
      const { host, b, onA, admin } = await setup()
      const newcomer = makeKeys()
      const onB = await authed(b, host, newcomer)
      const { subId } = await subscribe(onB, [{ kinds: [9], authors: [admin.pubkey] }])
      // B caches "not a member" here
      const before = await post(onA, admin, 'vault')
      expect(await deliveredBefore(onB, subId, before.event.id, (await marker(onA, admin)).event.id)).toBe(false)
      expect((await putUser(onA, admin, 'vault', newcomer.pubkey)).ok.accepted).toBe(true)
      const after = await post(onA, admin, 'vault')
      await delivered(onB, subId, after.event.id)
    })
  })

  describe('channel state kept from non-members on every node', () => {
    const STATE = [39000, 39001, 39002, 39003]
    const stateEvent = (c: TestClient, subId: string, kind: number, has?: string) =>
      c.next((f) => {
        const e = f[2] as NostrEvent | undefined
        return f[0] === 'EVENT' && f[1] === subId && e?.kind === kind && (has === undefined || e.tags.some((t) => t[1] === has))
      })

    it('serves a hidden channel’s 39000–39003 stored through A to a member on B only, by #d, id and COUNT', async () => {
      const { host, b, onA, admin, member, outsider } = await setup()
      expect((await editMetadata(onA, admin, 'vault', { flags: ['hidden'] })).ok.accepted).toBe(true)
      const memberOnB = await authed(b, host, member)
      const stored = await reqEvents(memberOnB, [{ kinds: STATE, '#d': ['vault'] }])
      expect(stored.map((e) => e.kind).sort()).toEqual([39000, 39001, 39002, 39003])
      for (const reader of [await client(b, host), await authed(b, host, outsider)]) {
        expect(await reqEvents(reader, [{ kinds: STATE, '#d': ['vault'] }])).toEqual([])
        expect(await reqEvents(reader, [{ ids: idsOf(stored) }])).toEqual([])
        expect(await count(reader, [{ kinds: STATE, '#d': ['vault'] }])).toBe(0)
      }
    })

    it('delivers on B a hidden channel’s edit made on A to a member, and not to an unauthenticated or stranger subscription', async () => {
      const { host, b, onA, admin, member, outsider } = await setup()
      expect((await editMetadata(onA, admin, 'vault', { flags: ['hidden'] })).ok.accepted).toBe(true)
      const filters = [{ kinds: STATE }, { kinds: [9], authors: [admin.pubkey] }]
      const readers = [await authed(b, host, member), await client(b, host), await authed(b, host, outsider)]
      const subs = await Promise.all(readers.map((c) => subscribe(c, filters)))
      expect((await editMetadata(onA, admin, 'vault', { name: 'renamed' })).ok.accepted).toBe(true)
      const renamed = (await stateEvent(readers[0]!, subs[0]!.subId, 39000, 'renamed'))[2] as NostrEvent
      const after = await marker(onA, admin)
      expect(await deliveredBefore(readers[1]!, subs[1]!.subId, renamed.id, after.event.id)).toBe(false)
      expect(await deliveredBefore(readers[2]!, subs[2]!.subId, renamed.id, after.event.id)).toBe(false)
    })

    it('delivers on B the 39002 carrying Carol’s addition on A to a member only, and serves the lists to no stranger', async () => {
      const { host, b, onA, admin, member, outsider } = await setup()
      const carol = makeKeys()
      const filters = [{ kinds: [39001, 39002] }, { kinds: [9], authors: [admin.pubkey] }]
      const readers = [await authed(b, host, member), await client(b, host), await authed(b, host, outsider)]
      const subs = await Promise.all(readers.map((c) => subscribe(c, filters)))
      expect((await putUser(onA, admin, 'vault', carol.pubkey)).ok.accepted).toBe(true)
      const listed = (await stateEvent(readers[0]!, subs[0]!.subId, 39002, carol.pubkey))[2] as NostrEvent
      const after = await marker(onA, admin)
      expect(await deliveredBefore(readers[1]!, subs[1]!.subId, listed.id, after.event.id)).toBe(false)
      expect(await deliveredBefore(readers[2]!, subs[2]!.subId, listed.id, after.event.id)).toBe(false)
      expect(await reqEvents(readers[1]!, [{ kinds: [39001, 39002], '#d': ['vault'] }])).toEqual([])
    })
  })

  describe('invite codes', () => {
    it('admits exactly one of two joins racing through A and B with one single-use code made on A', async () => {
      const { host, a, b } = await nodes()
      const admin = makeKeys()
      const onA = await client(a, host)
      const onB = await client(b, host)
      expect((await createChannel(onA, admin, 'club', { flags: ['closed', 'restricted'] })).ok.accepted).toBe(true)
      expect((await createInvite(onA, admin, 'club', 'one-seat')).ok.accepted).toBe(true)
      const [alice, bob] = [makeKeys(), makeKeys()]
      const answers = await Promise.all([join(onA, alice, 'club', 'one-seat'), join(onB, bob, 'club', 'one-seat')])
      expect(answers.map((x) => x.ok.accepted).sort()).toEqual([false, true])
      expect(answers.find((x) => !x.ok.accepted)?.ok.prefix).toBe('restricted')
      const admitted = [alice, bob].filter((_, i) => answers[i]!.ok.accepted)
      const refused = [alice, bob].filter((_, i) => !answers[i]!.ok.accepted)
      expect((await post(onB, admitted[0]!, 'club')).ok.accepted).toBe(true)
      expect((await post(onA, refused[0]!, 'club')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
    })
  })

  describe('removing a member', () => {
    it('stops delivery on B within one broadcast: the first event published on A after the 9001’s OK is not delivered there', async () => {
      // a TTL far longer than the test: only the invalidation broadcast can stop B's cached answer
      const { host, b, onA, admin, member } = await setup(60_000)
      const memberOnB = await authed(b, host, member)
      const { subId } = await subscribe(memberOnB, [{ kinds: [9], authors: [admin.pubkey] }])
      // B has now answered (and cached) "member" for this pubkey
      await delivered(memberOnB, subId, (await post(onA, admin, 'vault')).event.id)
      expect((await removeUser(onA, admin, 'vault', member.pubkey)).ok.accepted).toBe(true)
      const secret = await post(onA, admin, 'vault')
      const after = await marker(onA, admin)
      expect(await deliveredBefore(memberOnB, subId, secret.event.id, after.event.id)).toBe(false)
      expect(await reqEvents(memberOnB, [{ '#h': ['vault'] }])).toEqual([])
    })

    it('stops delivery on B within the cache TTL when the broadcast is lost (only the row was deleted)', async () => {
      const { id, host, b, onA, admin, member } = await setup()
      const memberOnB = await authed(b, host, member)
      const { subId } = await subscribe(memberOnB, [{ kinds: [9], authors: [admin.pubkey] }])
      await delivered(memberOnB, subId, (await post(onA, admin, 'vault')).event.id)
      const sql = postgres(cluster.databaseUrl(), { max: 1, onnotice: () => {} })
      let deletedAt: number
      try {
        const gone =
          await sql`DELETE FROM channel_members WHERE community = ${id} AND channel = ${'vault'} AND pubkey = ${member.pubkey} RETURNING 1`
        // from the commit on, every lookup answers "not a member"; an answer cached before it lives one TTL more
        deletedAt = Date.now()
        expect(gone).toHaveLength(1)
      } finally {
        await sql.end()
      }
      // publish every ~200 ms until one private event is not delivered to B while the marker after it is
      let stoppedAt: number | undefined
      let deliveredAfterDelete = 0
      while (Date.now() - deletedAt < 10 * TTL_MS) {
        const sentAt = Date.now()
        const secret = await post(onA, admin, 'vault')
        expect(secret.ok.accepted).toBe(true)
        const after = await marker(onA, admin)
        if (!(await deliveredBefore(memberOnB, subId, secret.event.id, after.event.id))) {
          stoppedAt = sentAt
          break
        }
        deliveredAfterDelete++
        await new Promise((resolve) => setTimeout(resolve, 200))
      }
      expect(stoppedAt, `still delivered after ${10 * TTL_MS} ms (${deliveredAfterDelete} deliveries)`).toBeDefined()
      // one poll interval (~200 ms) and a round trip through Redis on top of the TTL
      const SLACK_MS = 700
      expect((stoppedAt as number) - deletedAt).toBeLessThanOrEqual(TTL_MS + SLACK_MS)
      // and once stopped it stays stopped
      const again = await post(onA, admin, 'vault')
      expect(await deliveredBefore(memberOnB, subId, again.event.id, (await marker(onA, admin)).event.id)).toBe(false)
    })
  })

  describe('an owner’s ban reaches the agents it attested', () => {
    it('closes the agent’s socket on B with "blocked:" when the owner is banned through A, and refuses its next AUTH on either node', async () => {
      const { host, a, b } = await nodes()
      const owner = makeKeys()
      const agent = makeKeys()
      const agentOnB = await client(b, host)
      expect(await authAsAgent(agentOnB, agent, owner, relayUrlOf(b, host))).toEqual({ accepted: true, message: '', prefix: undefined })
      expect((await publish(agentOnB, fresh(agent))).accepted).toBe(true)
      const ban = await callNip86(a, operator, 'banpubkey', [owner.pubkey, 'spam ring'], host)
      expect(ban.status).toBe(200)
      const notice = await agentOnB.next((f) => f[0] === 'NOTICE')
      expect(prefixOf(String(notice[1]))).toBe('blocked')
      expect((await agentOnB.closed).code).toBe(1008)
      for (const node of [a, b]) {
        const again = await client(node, host)
        expect(await authAsAgent(again, agent, owner, relayUrlOf(node, host))).toMatchObject({ accepted: false, prefix: 'blocked' })
      }
    })

    it('leaves an agent of another owner connected', async () => {
      const { id, host, a, b } = await nodes()
      const banned = makeKeys()
      const other = makeKeys()
      const agent = makeKeys()
      const otherAgent = makeKeys()
      const [onB, otherOnB] = [await client(b, host), await client(b, host)]
      expect((await authAsAgent(onB, agent, banned, relayUrlOf(b, host))).accepted).toBe(true)
      expect((await authAsAgent(otherOnB, otherAgent, other, relayUrlOf(b, host))).accepted).toBe(true)
      await a.relay.banPubkey(id, banned.pubkey, 'spam')
      expect((await onB.closed).code).toBe(1008)
      expect((await publish(otherOnB, fresh(otherAgent))).accepted).toBe(true)
    })

    it('refuses the agent’s next EVENT with "blocked:" on B even when the ban broadcast is lost (only the row was written)', async () => {
      const { id, host, b } = await nodes()
      const owner = makeKeys()
      const agent = makeKeys()
      const onB = await client(b, host)
      expect((await authAsAgent(onB, agent, owner, relayUrlOf(b, host))).accepted).toBe(true)
      expect((await publish(onB, fresh(agent))).accepted).toBe(true)
      const store = await openPostgresCommunityStore({ url: cluster.databaseUrl() })
      try {
        await store.banPubkey(id, owner.pubkey, 'quietly banned')
      } finally {
        await store.close()
      }
      expect((await publish(onB, fresh(agent))).prefix).toBe('blocked')
    })
  })
})
