import { randomUUID } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { filter, firstValueFrom } from 'rxjs'
import { describe, expect, it } from 'vitest'
import { tell } from '../../src/actors/kernel'
import { createBusMac, deriveBusMacKey } from '../../src/infra/bus/bus-mac'
import { eventsChannel } from '../../src/infra/redis/keys'
import type { EventStore } from '../../src/infra/store/event-store'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { makeKeys, type SignedEvent, signEvent, type TestKeys } from '../support/events'
import { openFailingSqliteStore } from '../support/failing-event-store'
import { httpGet } from '../support/http'
import { metric } from '../support/metrics'
import { communityActor, type TestRelay } from '../support/relay'
import { auth, authEvent, challengeOf, client, count, idsOf, publish, relayUrlOf, reqEvents } from '../support/relay-client'
import { REDIS_URL, useCluster, useRelays } from '../support/relay-fixtures'
import type { Frame, TestClient } from '../support/ws-client'

/**
 * The relay half of the agent registry (docs/agent-registry.md): kind 31990 announcements served only while
 * their author's presence lease is live, departures (kind 21990) on lapse and goodbye, handshake shaping.
 * Presence is shortened through config: heartbeat 0.3 s ⇒ a lease of 0.9 s (the store keeps whole seconds:
 * 1 s), swept every 0.1 s, so a lapse is heard about a second after the last heartbeat.
 */
const SHORT = { presenceHeartbeatSeconds: 0.3, leaseSweepSeconds: 0.1 }

const heartbeat = (keys: TestKeys, status = `online ${Math.random()}`): SignedEvent => signEvent(keys, { kind: 20001, content: status })
const goodbye = (keys: TestKeys): SignedEvent => signEvent(keys, { kind: 20001, content: 'offline' })

/** The wire format agreed with the agent client (src/client/agent-client.ts). */
function announcement(keys: TestKeys, capabilities: { name: string; kinds: number[] }[], load = '0.25', created_at?: number): SignedEvent {
  return signEvent(keys, {
    kind: 31990,
    created_at,
    tags: [
      ['d', 'apiary-agent'],
      ...capabilities.map((c) => ['c', c.name]),
      ...capabilities.flatMap((c) => c.kinds.map((k) => ['k', String(k)])),
      ['version', '1.0.0'],
      ['load', load],
    ],
    content: JSON.stringify({ capabilities }),
  })
}

async function authed(r: TestRelay, keys: TestKeys, host?: string): Promise<TestClient> {
  const c = await client(r, host)
  expect((await auth(c, keys, relayUrlOf(r, host))).accepted).toBe(true)
  return c
}

const announcementsOf = (c: TestClient, pubkey: string): Promise<NostrEvent[]> => reqEvents(c, [{ kinds: [31990], authors: [pubkey] }])

/** A live subscription to arrivals and departures, past its EOSE. */
async function watch(c: TestClient, subId = 'registry'): Promise<string> {
  c.send(['REQ', subId, { kinds: [31990, 21990] }])
  await c.next((f) => f[0] === 'EOSE' && f[1] === subId)
  return subId
}

/** A watcher subscribed to the registry, then `agent` authenticated and announcing `echo` (no heartbeat yet). */
async function announcedEcho(r: TestRelay, agent: TestKeys) {
  const watcher = await client(r)
  const sub = await watch(watcher)
  const a = await authed(r, agent)
  const ann = announcement(agent, [{ name: 'echo', kinds: [5050] }])
  expect((await publish(a, ann)).accepted).toBe(true)
  return { watcher, sub, a, ann }
}

const arrivalOf = (c: TestClient, subId: string, id: string, timeoutMs?: number) =>
  c.next((f) => f[0] === 'EVENT' && f[1] === subId && (f[2] as NostrEvent).id === id, timeoutMs)

const departureOf = async (c: TestClient, subId: string, agent: string): Promise<NostrEvent> =>
  (
    await c.next(
      (f) => f[0] === 'EVENT' && f[1] === subId && (f[2] as NostrEvent).kind === 21990 && tagOf(f[2] as NostrEvent, 'p') === agent,
    )
  )[2] as NostrEvent

const tagOf = (e: NostrEvent, name: string) => e.tags.find((t) => t[0] === name)?.[1]
const selfOf = async (r: TestRelay) =>
  (JSON.parse((await httpGet(r, '/', { accept: 'application/nostr+json' })).body) as { self: string }).self

describe('the agent registry: announcements live only while their lease is', () => {
  const relays = useRelays()

  it("serves an announcement by REQ only while its author's heartbeat is live, and again after the next heartbeat", async () => {
    const r = await relays.start(SHORT)
    const agent = makeKeys()
    const a = await authed(r, agent)
    const watcher = await client(r)
    const sub = await watch(watcher)
    expect((await publish(a, heartbeat(agent))).accepted).toBe(true)
    const ann = announcement(agent, [{ name: 'echo', kinds: [5050] }])
    expect((await publish(a, ann)).accepted).toBe(true)
    const reader = await client(r)
    expect(idsOf(await announcementsOf(reader, agent.pubkey))).toEqual([ann.event.id])

    // no more heartbeats: the sweep finds the lease lapsed and says so; from then on the REQ hides it
    await departureOf(watcher, sub, agent.pubkey)
    expect(await announcementsOf(reader, agent.pubkey)).toEqual([])
    expect(await reqEvents(reader, [{ authors: [agent.pubkey] }])).toEqual([])

    expect((await publish(a, heartbeat(agent))).accepted).toBe(true)
    // the next heartbeat brings it back: a live subscriber hears of it as an arrival, a REQ serves it
    await arrivalOf(watcher, sub, ann.event.id)
    expect(idsOf(await announcementsOf(reader, agent.pubkey))).toEqual([ann.event.id])
  })

  it('delivers an announcement live on arrival, a 21990 "expired" signed by the relay when the lease lapses, and "offline" on goodbye', async () => {
    const r = await relays.start(SHORT)
    const [agent, other] = [makeKeys(), makeKeys()]
    const watcher = await client(r)
    const sub = await watch(watcher)
    const a = await authed(r, agent)
    await publish(a, heartbeat(agent))
    const ann = announcement(agent, [{ name: 'translate', kinds: [5002] }])
    await publish(a, ann)
    expect((await arrivalOf(watcher, sub, ann.event.id))[2]).toEqual(ann.event)

    const expired = await departureOf(watcher, sub, agent.pubkey)
    expect(expired.pubkey).toBe(await selfOf(r))
    expect(expired.tags).toEqual([
      ['p', agent.pubkey],
      ['a', `31990:${agent.pubkey}:apiary-agent`],
      ['status', 'expired'],
    ])
    expect(await metric(r, 'apiary_agent_leases_expired_total')).toBe(1)

    // a goodbye: answered OK, the presence cleared at once (no waiting for the lease), the departure sent
    const o = await authed(r, other)
    await publish(o, heartbeat(other))
    const otherAnn = announcement(other, [{ name: 'echo', kinds: [5050] }])
    await publish(o, otherAnn)
    await arrivalOf(watcher, sub, otherAnn.event.id)
    await expect.poll(() => metric(r, 'apiary_agents')).toBe(1)
    expect(await publish(o, goodbye(other))).toMatchObject({ accepted: true })
    const reader = await client(r)
    expect(await announcementsOf(reader, other.pubkey)).toEqual([])
    expect(await reqEvents(reader, [{ kinds: [20001], authors: [other.pubkey] }])).toEqual([])
    expect(tagOf(await departureOf(watcher, sub, other.pubkey), 'status')).toBe('offline')
    expect(await metric(r, 'apiary_agent_byes_total')).toBe(1)
    expect(await metric(r, 'apiary_agents')).toBe(0)
    // one departure each: the goodbye's lease does not lapse a second time
    expect(watcher.frames.filter((f) => f[0] === 'EVENT' && (f[2] as NostrEvent).kind === 21990)).toHaveLength(2)
  })

  it('stores an announcement sent before any heartbeat but serves it only from the first heartbeat on', async () => {
    const r = await relays.start(SHORT)
    const agent = makeKeys()
    const { watcher, sub, a, ann } = await announcedEcho(r, agent)
    const reader = await client(r)
    expect(await announcementsOf(reader, agent.pubkey)).toEqual([])
    await publish(a, heartbeat(agent))
    await arrivalOf(watcher, sub, ann.event.id)
    expect(idsOf(await announcementsOf(reader, agent.pubkey))).toEqual([ann.event.id])
    // delivered once, on the heartbeat, not also when it was published
    expect(watcher.frames.filter((f) => f[0] === 'EVENT' && (f[2] as NostrEvent).id === ann.event.id)).toHaveLength(1)
  })

  it('delivers an announcement sent right behind the first heartbeat (pipelined) to a live subscriber once', async () => {
    const r = await relays.start(SHORT)
    const agent = makeKeys()
    const watcher = await client(r)
    const sub = await watch(watcher)
    const a = await authed(r, agent)
    const [hb, ann] = [heartbeat(agent), announcement(agent, [{ name: 'echo', kinds: [5050] }])]
    a.sendRaw(`["EVENT",${hb.raw}]`)
    a.sendRaw(`["EVENT",${ann.raw}]`)
    expect((await a.ok(hb.event.id))[2]).toBe(true)
    expect((await a.ok(ann.event.id))[2]).toBe(true)
    await arrivalOf(watcher, sub, ann.event.id)
    // the registry has settled once the agent is counted live; by then any second copy would have been sent
    await expect.poll(() => metric(r, 'apiary_agents')).toBe(1)
    expect(watcher.frames.filter((f) => f[0] === 'EVENT' && (f[2] as NostrEvent).id === ann.event.id)).toHaveLength(1)
  })

  it('counts announcements by COUNT only while their lease is live, and other kinds as always', async () => {
    const r = await relays.start(SHORT)
    const agent = makeKeys()
    const a = await authed(r, agent)
    const watcher = await client(r)
    const sub = await watch(watcher)
    await publish(a, heartbeat(agent))
    const note = signEvent(agent, { kind: 1, content: 'hello' })
    expect((await publish(a, note)).accepted).toBe(true)
    await publish(a, announcement(agent, [{ name: 'echo', kinds: [5050] }]))
    const reader = await client(r)
    expect(await count(reader, [{ kinds: [31990], authors: [agent.pubkey] }])).toBe(1)
    expect(await count(reader, [{ authors: [agent.pubkey] }])).toBe(2)
    expect(await count(reader, [{ kinds: [1, 31990], authors: [agent.pubkey] }])).toBe(2)
    await departureOf(watcher, sub, agent.pubkey)
    expect(await count(reader, [{ kinds: [31990], authors: [agent.pubkey] }])).toBe(0)
    expect(await count(reader, [{ authors: [agent.pubkey] }])).toBe(1)
    expect(await count(reader, [{ kinds: [1], authors: [agent.pubkey] }, { kinds: [31990] }])).toBe(1)
  })

  /** One live agent's announcement, behind `dead` newer ones whose authors never heartbeat. */
  async function liveBehindDead(r: TestRelay, dead: number): Promise<SignedEvent> {
    const agent = makeKeys()
    const a = await authed(r, agent)
    await publish(a, heartbeat(agent, 'here'))
    const now = Math.floor(Date.now() / 1000)
    const live = announcement(agent, [{ name: 'echo', kinds: [5050] }], '0.25', now - 100)
    expect((await publish(a, live)).accepted).toBe(true)
    for (let i = 0; i < dead; i++) {
      const gone = makeKeys()
      expect(
        (await publish(await authed(r, gone), announcement(gone, [{ name: 'echo', kinds: [5050] }], '0.25', now - 50 + i))).accepted,
      ).toBe(true)
    }
    return live
  }

  it("fills a REQ's page with live announcements when more lapsed ones are newer than its limit", async () => {
    const r = await relays.start({ presenceHeartbeatSeconds: 15, limits: { maxLimit: 2 } })
    const live = await liveBehindDead(r, 5)
    const reader = await client(r)
    expect(idsOf(await reqEvents(reader, [{ kinds: [31990], '#c': ['echo'], limit: 2 }]))).toEqual([live.event.id])
    expect(idsOf(await reqEvents(reader, [{ '#c': ['echo'], limit: 1 }]))).toEqual([live.event.id])
    // other filters of the same REQ keep their own page
    const note = signEvent(makeKeys(), { kind: 1, content: 'hello' })
    expect((await publish(reader, note)).accepted).toBe(true)
    expect(
      idsOf(
        await reqEvents(reader, [
          { kinds: [31990], limit: 1 },
          { kinds: [1], ids: [note.event.id] },
        ]),
      ),
    ).toEqual([note.event.id, live.event.id])
  })

  it('counts live announcements exactly by a COUNT without a limit, however many lapsed ones there are beyond maxLimit', async () => {
    const r = await relays.start({ presenceHeartbeatSeconds: 15, limits: { maxLimit: 2 } })
    await liveBehindDead(r, 5)
    const reader = await client(r)
    expect(await count(reader, [{ kinds: [31990], '#c': ['echo'] }])).toBe(1)
    expect(await count(reader, [{ '#c': ['echo'] }])).toBe(1)
  })

  it('looks an agent up again when the lookup of its announcement never answers, and delivers its arrival then', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'apiary-registry-'))
    const real = openFailingSqliteStore(join(dir, 'events.sqlite')).store
    const agent = makeKeys()
    let lookups = 0
    let release = () => {}
    const hung = new Promise<never[]>((resolve) => {
      release = () => resolve([])
    })
    // the first lookup of this agent's announcement (one 31990 by its author, limit 1) never settles
    const store: EventStore = {
      ...real,
      query: (c, filters, opts) => {
        const [f] = filters
        if (filters.length === 1 && f?.limit === 1 && f.kinds?.[0] === 31990 && f.authors?.[0] === agent.pubkey && ++lookups === 1)
          return hung
        return real.query(c, filters, opts)
      },
    }
    const r = await relays.start(SHORT, dir, { eventStore: store })
    try {
      const { watcher, sub, a, ann } = await announcedEcho(r, agent)
      const beat = setInterval(() => void publish(a, heartbeat(agent)), 300)
      try {
        // the sweep forgets the check after two leases (1.8 s); the next heartbeat looks again
        await arrivalOf(watcher, sub, ann.event.id, 8_000)
      } finally {
        clearInterval(beat)
      }
      expect(lookups).toBeGreaterThanOrEqual(2)
    } finally {
      release()
    }
  })

  it('delivers an arrival whose lookup answered while its community was down, once the community is back', {
    timeout: 30_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'apiary-registry-'))
    const real = openFailingSqliteStore(join(dir, 'events.sqlite')).store
    const agent = makeKeys()
    let release = () => {}
    const released = new Promise<void>((resolve) => {
      release = resolve
    })
    // the registry's lookup of this agent's announcement answers only once the test releases it
    const store: EventStore = {
      ...real,
      query: (c, filters, opts) =>
        filters.length === 1 && filters[0]?.limit === 1 && filters[0].authors?.[0] === agent.pubkey
          ? released.then(() => real.query(c, filters, opts))
          : real.query(c, filters, opts),
    }
    // a 45 s lease: the sweep forgets a lost check only after 90 s, so only the re-offered arrival can be in time
    const r = await relays.start({ presenceHeartbeatSeconds: 15 }, dir, { eventStore: store })
    try {
      const { watcher, sub, a, ann } = await announcedEcho(r, agent)
      expect((await publish(a, heartbeat(agent))).accepted).toBe(true)
      const ref = communityActor(r.relay, 'default')
      const gaveUp = firstValueFrom(r.relay.supervision$.pipe(filter((x) => x.type === 'gave-up' && x.path === 'community/default')))
      // six crashes in a row (a COUNT's store outage each): the community is down until its respawn
      for (let i = 0; i < 6; i++) tell(ref, { type: 'ReadResult', outcome: { ok: false, error: new Error('store down') } })
      await gaveUp
      // the arrival reaches a community that cannot take it: it is offered again until it can
      release()
      await arrivalOf(watcher, sub, ann.event.id, 20_000)
    } finally {
      release()
    }
  })

  it('refuses a kind 21990 from anyone but the relay with restricted:', async () => {
    const r = await relays.start(SHORT)
    const keys = makeKeys()
    const c = await authed(r, keys)
    const forged = signEvent(keys, {
      kind: 21990,
      tags: [
        ['p', makeKeys().pubkey],
        ['status', 'offline'],
      ],
    })
    expect(await publish(c, forged)).toMatchObject({ accepted: false, prefix: 'restricted' })
  })

  it('refuses a goodbye from a connection not authenticated as its author with auth-required:', async () => {
    const r = await relays.start(SHORT)
    const agent = makeKeys()
    const a = await authed(r, agent)
    await publish(a, heartbeat(agent, 'here'))
    expect(await publish(await client(r), goodbye(agent))).toMatchObject({ accepted: false, prefix: 'auth-required' })
    expect((await reqEvents(await client(r), [{ kinds: [20001], authors: [agent.pubkey] }])).map((e) => e.content)).toEqual(['here'])
  })

  it('states the presence gradient in NIP-11: heartbeat 15 s and lease 45 s by default', async () => {
    const r = await relays.start()
    const info = JSON.parse((await httpGet(r, '/', { accept: 'application/nostr+json' })).body) as { apiary: unknown }
    expect(info.apiary).toEqual({ presence: { heartbeat_seconds: 15, lease_seconds: 45 } })
  })
})

describe('handshake shaping (limits.maxConcurrentAuth)', () => {
  const relays = useRelays()

  /** `n` sockets, each sending its AUTH in the same turn; resolves with every OK frame. */
  async function authStorm(r: TestRelay, n: number): Promise<Frame[]> {
    const sockets = await Promise.all(Array.from({ length: n }, () => client(r)))
    const auths = await Promise.all(sockets.map(async (c) => ({ c, e: authEvent(makeKeys(), await challengeOf(c), relayUrlOf(r)) })))
    for (const { c, e } of auths) c.send(['AUTH', e.event])
    return Promise.all(auths.map(({ c, e }) => c.ok(e.event.id)))
  }

  it('answers AUTHs beyond maxConcurrentAuth in flight "rate-limited: retry in Ns" (1 ≤ N ≤ 5), accepts the rest, loses none', async () => {
    const r = await relays.start({ limits: { maxConcurrentAuth: 1 } })
    const oks = await authStorm(r, 40)
    const shaped = oks.filter((f) => f[2] === false)
    const accepted = oks.filter((f) => f[2] === true)
    expect(shaped.length + accepted.length).toBe(40)
    expect(shaped.length).toBeGreaterThan(0)
    expect(accepted.length).toBeGreaterThan(0)
    for (const f of shaped) {
      const m = /^rate-limited: retry in (\d)s$/.exec(f[3] as string)
      expect(m, f[3] as string).not.toBeNull()
      expect(Number(m?.[1])).toBeGreaterThanOrEqual(1)
      expect(Number(m?.[1])).toBeLessThanOrEqual(5)
    }
    expect(await metric(r, 'apiary_auth_shaped_total')).toBe(shaped.length)
    expect(await metric(r, 'apiary_handshake_seconds_count')).toBe(accepted.length)
  })

  it('accepts the same storm when it fits under maxConcurrentAuth', async () => {
    const r = await relays.start({ limits: { maxConcurrentAuth: 40 } })
    const oks = await authStorm(r, 40)
    expect(oks.filter((f) => f[2] === true)).toHaveLength(40)
    expect(await metric(r, 'apiary_auth_shaped_total')).toBe(0)
  })
})

describe('the agent registry in a cluster', () => {
  const relays = useRelays()
  const cluster = useCluster(relays)

  it('shows an agent heartbeating on A to a subscriber on B, and tells B when its lease lapses', async () => {
    const {
      host,
      nodes: [a, b],
    } = await cluster.nodes(2, SHORT)
    const agent = makeKeys()
    const watcher = await client(b!, host)
    const sub = await watch(watcher)
    const onA = await authed(a!, agent, host)
    await publish(onA, heartbeat(agent))
    const ann = announcement(agent, [{ name: 'echo', kinds: [5050] }])
    expect((await publish(onA, ann)).accepted).toBe(true)
    await arrivalOf(watcher, sub, ann.event.id)
    expect(idsOf(await announcementsOf(await client(b!, host), agent.pubkey))).toEqual([ann.event.id])
    expect(tagOf(await departureOf(watcher, sub, agent.pubkey), 'status')).toBe('expired')
    expect(await announcementsOf(await client(b!, host), agent.pubkey)).toEqual([])
  })

  it('drops a kind 21990 from the bus that the relay key did not sign, and delivers what follows it', async () => {
    const {
      id,
      host,
      nodes: [b],
    } = await cluster.nodes(1, SHORT)
    const watcher = await client(b!, host)
    watcher.send(['REQ', 'bus', { kinds: [1, 21990] }])
    await watcher.next((f) => f[0] === 'EOSE' && f[1] === 'bus')
    const forger = makeKeys()
    const forged = signEvent(forger, {
      kind: 21990,
      tags: [
        ['p', makeKeys().pubkey],
        ['status', 'offline'],
      ],
    })
    const marker = signEvent(forger, { kind: 1, content: 'after the forged departure' })
    // what a node's own bus can carry (the MAC keyed from the relay key: the test holds it) is still checked for
    // who signed a departure; without the key nothing gets this far (cluster-bus-mac.test.ts)
    const busMac = createBusMac(deriveBusMacKey(Uint8Array.from(Buffer.from(cluster.relaySecretKey, 'hex'))))
    const redis = new Redis(REDIS_URL)
    try {
      for (const e of [forged, marker]) {
        const body = `${randomUUID()}\n${e.raw}`
        await redis.publish(eventsChannel(id), busMac.sign(eventsChannel(id), body) + body)
      }
    } finally {
      redis.disconnect()
    }
    // Redis keeps one publisher's order and the community handles the two in turn: once the marker is here,
    // the departure would have been too
    await arrivalOf(watcher, 'bus', marker.event.id)
    expect(watcher.frames.some((f) => f[0] === 'EVENT' && (f[2] as NostrEvent).id === forged.event.id)).toBe(false)
  })

  it('sends one departure per goodbye, however the sweep falls between the goodbye and its clearing', { timeout: 30_000 }, async () => {
    // a sweep every 2 ms over Redis round trips: some sweeps read the leases while goodbyes are being cleared
    const {
      host,
      nodes: [node],
    } = await cluster.nodes(1, { presenceHeartbeatSeconds: 15, leaseSweepSeconds: 0.002 })
    const watcher = await client(node!, host)
    const sub = await watch(watcher)
    const agents = Array.from({ length: 60 }, () => makeKeys())
    const conns = await Promise.all(
      agents.map(async (k) => {
        const c = await authed(node!, k, host)
        await publish(c, heartbeat(k))
        await publish(c, announcement(k, [{ name: 'echo', kinds: [5050] }]))
        return c
      }),
    )
    await expect.poll(() => metric(node!, 'apiary_agents'), { timeout: 10_000 }).toBe(agents.length)
    await Promise.all(agents.map((k, i) => publish(conns[i]!, goodbye(k))))
    await Promise.all(agents.map((k) => departureOf(watcher, sub, k.pubkey)))
    // room for any second departure to arrive
    await new Promise((resolve) => setTimeout(resolve, 300))
    const departures = watcher.frames
      .filter((f) => f[0] === 'EVENT' && (f[2] as NostrEvent).kind === 21990)
      .map((f) => tagOf(f[2] as NostrEvent, 'p'))
    expect(departures).toHaveLength(agents.length)
    expect(new Set(departures).size).toBe(agents.length)
    // each is the goodbye's: the sweep leaves an agent that is saying goodbye to it
    const statuses = watcher.frames
      .filter((f) => f[0] === 'EVENT' && (f[2] as NostrEvent).kind === 21990)
      .map((f) => tagOf(f[2] as NostrEvent, 'status'))
    expect(new Set(statuses)).toEqual(new Set(['offline']))
  })

  it('tells a subscriber on B at once when an agent on A says goodbye, and B no longer serves its announcement', async () => {
    const {
      host,
      nodes: [a, b],
    } = await cluster.nodes(2, { presenceHeartbeatSeconds: 15 })
    const agent = makeKeys()
    const watcher = await client(b!, host)
    const sub = await watch(watcher)
    const onA = await authed(a!, agent, host)
    await publish(onA, heartbeat(agent))
    const ann = announcement(agent, [{ name: 'echo', kinds: [5050] }])
    await publish(onA, ann)
    await arrivalOf(watcher, sub, ann.event.id)
    await expect.poll(() => metric(a!, 'apiary_agents')).toBe(1)
    expect((await publish(onA, goodbye(agent))).accepted).toBe(true)
    // a 45 s lease: only the goodbye can have ended it this soon
    expect(tagOf(await departureOf(watcher, sub, agent.pubkey), 'status')).toBe('offline')
    expect(await announcementsOf(await client(b!, host), agent.pubkey)).toEqual([])
    expect(await count(await client(b!, host), [{ kinds: [31990], authors: [agent.pubkey] }])).toBe(0)
  })
})
