import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import type { ConfigInput } from '../../src/infra/config'
import { prefixOf } from '../../src/protocols/reasons'
import { makeKeys, type TestKeys } from '../support/events'
import { eventually } from '../support/eventually'
import { httpGet } from '../support/http'
import { authAsAgent } from '../support/nip29-client'
import { managementUrl, nip98Header, postNip86 } from '../support/nip86-client'
import type { TestRelay } from '../support/relay'
import {
  auth,
  client,
  fresh,
  idsOf,
  newSubId,
  type Ok,
  publish,
  publishNew,
  relayUrlOf,
  reqAnswer,
  reqEvents,
} from '../support/relay-client'
import { REDIS_URL, useCluster, useRelays } from '../support/relay-fixtures'
import type { TestClient } from '../support/ws-client'

/**
 * Community settings and rate-limit tiers on a cluster of two nodes (one Redis, one PostgreSQL). A setting
 * changed through A reaches B by the InvalidateAll broadcast, so B must enforce it within moments of A's
 * answer; revalidation (the backstop for a lost broadcast) is set to 300 s, far beyond any wait here.
 */

const GENEROUS = { ratePerSecond: 100_000, burst: 100_000 }
const REVALIDATE_SECONDS = 300
/** How long B may take to hear A's broadcast on a loaded machine: still a small fraction of revalidation. */
const PROPAGATION_MS = 10_000

let callCounter = 0
/** One NIP-86 call to `node` for the community on `host`; the body's `id` keeps identical calls from being replays. */
async function call(node: TestRelay, keys: TestKeys, host: string, method: string, params: unknown[] = []) {
  const body = JSON.stringify({ id: ++callCounter, method, params })
  const answer = await postNip86(node, body, nip98Header(keys, managementUrl(node, host), body), host)
  if (answer.status !== 200 || answer.json.result !== true) throw new Error(`${method} answered ${answer.status} ${answer.body}`)
}

/** Repeats `attempt` every 50 ms until `done` holds (at most PROPAGATION_MS): the value and how long it took. */
async function untilPropagated<T>(attempt: () => Promise<T>, done: (value: T) => boolean, what: string) {
  const started = performance.now()
  const value = await eventually(attempt, done, what, { timeoutMs: PROPAGATION_MS, intervalMs: 50 })
  return { value, afterMs: performance.now() - started }
}

const refusedWith = (prefix: string) => (ok: Ok) => !ok.accepted && ok.prefix === prefix

describe('community settings changed through one node, on a cluster', () => {
  const relays = useRelays()
  const cluster = useCluster(relays)
  const operator = makeKeys()

  async function nodes() {
    const { host, nodes: started } = await cluster.nodes(2, {
      operatorPubkeys: [operator.pubkey],
      revalidateSeconds: REVALIDATE_SECONDS,
      rateLimits: { human: { events: GENEROUS, reqs: GENEROUS, api: GENEROUS } },
    })
    return { host, a: started[0]!, b: started[1]! }
  }

  it('refuses an unauthenticated EVENT on B with "auth-required:" moments after writePolicy was set through A', async () => {
    const { host, a, b } = await nodes()
    const author = makeKeys()
    const onB = await client(b, host)
    expect((await publish(onB, fresh(author))).accepted).toBe(true)
    await call(a, operator, host, 'setcommunitypolicy', [{ writePolicy: 'authenticated' }])
    const { value, afterMs } = await untilPropagated(
      () => publish(onB, fresh(author)),
      refusedWith('auth-required'),
      'B refusing with auth-required:',
    )
    expect(value.prefix).toBe('auth-required')
    expect(afterMs).toBeLessThan(PROPAGATION_MS)
    expect((await auth(onB, author, relayUrlOf(b, host))).accepted).toBe(true)
    expect((await publish(onB, fresh(author))).accepted).toBe(true)
  })

  it('refuses a non-member on B with "restricted:" once writePolicy "members" was set through A, and accepts a pubkey allowed through A', async () => {
    const { host, a, b } = await nodes()
    const [member, outsider] = [makeKeys(), makeKeys()]
    await call(a, operator, host, 'allowpubkey', [member.pubkey])
    const outsiderOnB = await client(b, host)
    expect((await auth(outsiderOnB, outsider, relayUrlOf(b, host))).accepted).toBe(true)
    await call(a, operator, host, 'setcommunitypolicy', [{ writePolicy: 'members' }])
    const { value } = await untilPropagated(
      () => publish(outsiderOnB, fresh(outsider)),
      refusedWith('restricted'),
      'B refusing the outsider with restricted:',
    )
    expect(value.prefix).toBe('restricted')
    const memberOnB = await client(b, host)
    expect((await auth(memberOnB, member, relayUrlOf(b, host))).accepted).toBe(true)
    expect((await publish(memberOnB, fresh(member))).accepted).toBe(true)
  })

  it('closes an anonymous REQ on B with "auth-required:" moments after readPolicy was set through A', async () => {
    const { host, a, b } = await nodes()
    const onB = await client(b, host)
    expect((await reqAnswer(onB, newSubId(), [{ kinds: [1] }]))[0]).toBe('EOSE')
    await call(a, operator, host, 'setcommunitypolicy', [{ readPolicy: 'authenticated' }])
    const { value, afterMs } = await untilPropagated(
      () => reqAnswer(onB, newSubId(), [{ kinds: [1] }]),
      (f) => f[0] === 'CLOSED',
      'B closing the REQ',
    )
    expect(value[0]).toBe('CLOSED')
    expect(prefixOf(value[2] as string)).toBe('auth-required')
    expect(afterMs).toBeLessThan(PROPAGATION_MS)
  })

  it('refuses a kind on B with "blocked:" moments after allowkind (of another kind) and disallowkind through A', async () => {
    const { host, a, b } = await nodes()
    const keys = makeKeys()
    const onB = await client(b, host)
    expect((await publish(onB, fresh(keys, { kind: 7 }))).accepted).toBe(true)
    await call(a, operator, host, 'allowkind', [1])
    const reaction = await untilPropagated(
      () => publish(onB, fresh(keys, { kind: 7 })),
      refusedWith('blocked'),
      'B refusing kind 7 with blocked:',
    )
    expect(reaction.value.prefix).toBe('blocked')
    expect(reaction.afterMs).toBeLessThan(PROPAGATION_MS)
    expect((await publish(onB, fresh(keys, { kind: 1 }))).accepted).toBe(true)
    await call(a, operator, host, 'disallowkind', [1])
    const note = await untilPropagated(
      () => publish(onB, fresh(keys, { kind: 1 })),
      refusedWith('blocked'),
      'B refusing kind 1 with blocked:',
    )
    expect(note.value.prefix).toBe('blocked')
    expect(note.afterMs).toBeLessThan(PROPAGATION_MS)
  })

  it('removes an event stored through B from every node when banned through A, and B refuses it again with "blocked:", not "duplicate:"', async () => {
    const { host, a, b } = await nodes()
    const onB = await client(b, host)
    const e = await publishNew(onB, makeKeys())
    await call(a, operator, host, 'banevent', [e.event.id, 'spam'])
    // the deletion is in the store every node reads: gone as soon as A answered
    expect(await reqEvents(onB, [{ ids: [e.event.id] }])).toEqual([])
    expect(await reqEvents(await client(a, host), [{ ids: [e.event.id] }])).toEqual([])
    // B's list of banned ids is re-read on the broadcast; until then its recent-id guard says "duplicate:"
    const { value, afterMs } = await untilPropagated(
      () => publish(onB, e),
      refusedWith('blocked'),
      'B refusing the banned event with blocked:',
    )
    expect(value.prefix).toBe('blocked')
    expect(afterMs).toBeLessThan(PROPAGATION_MS)
    expect((await publish(await client(a, host), e)).prefix).toBe('blocked')
    expect(await reqEvents(onB, [{ ids: [e.event.id] }])).toEqual([])
  })

  it('accepts an event again through A after allowevent, and B serves it', async () => {
    const { host, a, b } = await nodes()
    const e = await publishNew(await client(b, host), makeKeys())
    await call(a, operator, host, 'banevent', [e.event.id])
    await call(a, operator, host, 'allowevent', [e.event.id])
    expect(await publish(await client(a, host), e)).toEqual({ accepted: true, message: '', prefix: undefined })
    expect(idsOf(await reqEvents(await client(b, host), [{ ids: [e.event.id] }]))).toEqual([e.event.id])
  })
})

describe('rate-limit tiers across the nodes of a cluster', () => {
  const relays = useRelays()
  const cluster = useCluster(relays)
  const operator = makeKeys()
  const TINY = 0.01
  const rateLimits = {
    human: { events: { ratePerSecond: TINY, burst: 2 }, reqs: GENEROUS, api: GENEROUS },
    agentStandard: { events: { ratePerSecond: TINY, burst: 4 }, reqs: GENEROUS, api: GENEROUS },
    agentElevated: { events: { ratePerSecond: TINY, burst: 6 }, reqs: GENEROUS, api: GENEROUS },
  }

  /** Two nodes serving a fresh community of the test's own, with `agents` on its roster from the config. */
  async function nodes(agents: { pubkey: string; tier: 'standard' | 'elevated' | 'platform' }[] = []) {
    const id = `c-${randomBytes(5).toString('hex')}`
    const host = `${id}.test`
    const config: ConfigInput = {
      redisUrl: REDIS_URL,
      databaseUrl: cluster.databaseUrl(),
      relaySecretKey: cluster.relaySecretKey,
      operatorPubkeys: [operator.pubkey],
      revalidateSeconds: REVALIDATE_SECONDS,
      communities: [{ id, hosts: [host], agents }],
      rateLimits,
    }
    const a = await relays.start(config)
    const b = await relays.start(config)
    return { host, a, b }
  }

  async function authedOn(node: TestRelay, host: string, keys: TestKeys): Promise<TestClient> {
    const c = await client(node, host)
    expect((await auth(c, keys, relayUrlOf(node, host))).accepted).toBe(true)
    return c
  }

  /** Publishes `n` events by `keys`, alternating between the clients; the OK of each. */
  async function alternate(clients: TestClient[], keys: TestKeys, n: number): Promise<Ok[]> {
    const oks: Ok[] = []
    for (let i = 0; i < n; i++) oks.push(await publish(clients[i % clients.length]!, fresh(keys)))
    return oks
  }

  const accepted = (oks: Ok[]) => oks.map((o) => o.accepted)

  it('gives a human one budget of 2 events over both nodes, then "rate-limited:" on each', async () => {
    const { host, a, b } = await nodes()
    const human = makeKeys()
    const clients = [await authedOn(a, host, human), await authedOn(b, host, human)]
    expect(accepted(await alternate(clients, human, 2))).toEqual([true, true])
    for (const c of clients) expect((await publish(c, fresh(human))).prefix).toBe('rate-limited')
  })

  it('gives a roster agent of tier elevated its budget of 6 events over both nodes, the 7th "rate-limited:"', async () => {
    const agent = makeKeys()
    const { host, a, b } = await nodes([{ pubkey: agent.pubkey, tier: 'elevated' }])
    const clients = [await authedOn(a, host, agent), await authedOn(b, host, agent)]
    expect(accepted(await alternate(clients, agent, 6))).toEqual([true, true, true, true, true, true])
    for (const c of clients) expect((await publish(c, fresh(agent))).prefix).toBe('rate-limited')
  })

  it('gives an agent put on the roster through A with setagenttier its tier on B', async () => {
    const agent = makeKeys()
    const { host, a, b } = await nodes()
    await call(a, operator, host, 'setagenttier', [agent.pubkey, 'elevated'])
    // nothing on B shows the roster; a name written after it shows when B has re-read the record (one read)
    await call(a, operator, host, 'changerelayname', ['roster read'])
    const seen = await untilPropagated(
      async () => JSON.parse((await httpGet(b, '/', { Accept: 'application/nostr+json', Host: `${host}:${b.port}` })).body).name as string,
      (name) => name === 'roster read',
      'B serving the new relay name',
    )
    expect(seen.value).toBe('roster read')
    const clients = [await authedOn(a, host, agent), await authedOn(b, host, agent)]
    expect(accepted(await alternate(clients, agent, 6))).toEqual([true, true, true, true, true, true])
    expect((await publish(clients[1]!, fresh(agent))).prefix).toBe('rate-limited')
  })

  it('gives an agent attested by a member (the agent not on the roster) the agent-standard budget of 4 over both nodes', async () => {
    const { host, a, b } = await nodes()
    const [owner, agent] = [makeKeys(), makeKeys()]
    // the owner is known to the community: an attestation by a stranger's key lifts nothing
    await call(a, operator, host, 'allowpubkey', [owner.pubkey])
    const clients: TestClient[] = []
    for (const node of [a, b]) {
      const c = await client(node, host)
      expect((await authAsAgent(c, agent, owner, relayUrlOf(node, host))).accepted).toBe(true)
      clients.push(c)
    }
    expect(accepted(await alternate(clients, agent, 4))).toEqual([true, true, true, true])
    for (const c of clients) expect((await publish(c, fresh(agent))).prefix).toBe('rate-limited')
  })
})
