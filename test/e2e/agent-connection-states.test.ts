import { bytesToHex } from '@noble/hashes/utils.js'
import { afterEach, describe, expect, it } from 'vitest'
import { AgentClient, type AgentClock } from '../../src/client/index'
import type { ConfigInput } from '../../src/infra/config'
import { makeKeys, type SignedEvent, signEvent, type TestKeys } from '../support/events'
import { labelledMetric } from '../support/metrics'
import type { TestRelay } from '../support/relay'
import { auth, client, publish, relayUrlOf } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'
import type { TestClient } from '../support/ws-client'

/**
 * The relay's own view of its agent connections (docs/agent-registry.md#agent-connection-states), read the way
 * an operator reads it: /metrics. Heartbeat 0.3 s ⇒ SUSPECT past 0.45 s, ZOMBIE past the 0.9 s lease, reaped
 * 0.6 s later; scanned every 50 ms, so the gauge lags a state by at most that.
 */
const SHORT: ConfigInput = { presenceHeartbeatSeconds: 0.3, agentSessionTimeoutSeconds: 0.6, agentOrphanScanSeconds: 0.05 }
const POLL = { interval: 20, timeout: 5_000 }

const gauge = (r: TestRelay, state: string) => labelledMetric(r, 'apiary_agent_connections', { community: 'default', state })
const departures = (r: TestRelay, cause: string) => labelledMetric(r, 'apiary_agent_departures_total', { cause })
const heartbeat = (keys: TestKeys, status = `online ${Math.random()}`): SignedEvent => signEvent(keys, { kind: 20001, content: status })

async function authed(r: TestRelay, keys: TestKeys): Promise<TestClient> {
  const c = await client(r)
  expect((await auth(c, keys, relayUrlOf(r))).accepted).toBe(true)
  return c
}

/** The system clock with a switch: while frozen, no timer of the agent fires (its process stopped, in effect). */
function freezableClock() {
  let frozen = false
  const held: (() => void)[] = []
  const clock: AgentClock = {
    now: () => Date.now(),
    setTimeout: (fn, ms) => setTimeout(() => (frozen ? held.push(fn) : fn()), ms) as unknown as ReturnType<AgentClock['setTimeout']>,
    clearTimeout: (h) => clearTimeout(h as unknown as ReturnType<typeof setTimeout>),
  }
  return {
    clock,
    freeze: () => {
      frozen = true
    },
    thaw: () => {
      frozen = false
      for (const fn of held.splice(0)) fn()
    },
  }
}

const agents: { agent: AgentClient; thaw: () => void }[] = []
afterEach(async () => {
  await Promise.all(
    agents.splice(0).map(({ agent, thaw }) => {
      thaw()
      return agent.stop()
    }),
  )
})

function newAgent(r: TestRelay) {
  const { clock, freeze, thaw } = freezableClock()
  const agent = new AgentClient({
    relays: [r.url],
    secretKey: bytesToHex(makeKeys().secretKey),
    capabilities: [{ name: 'echo', kinds: [5050] }],
    heartbeatSeconds: 0.3,
    leaseSeconds: 0.9,
    sessionSeconds: 30,
    goodbyeTimeoutMs: 2_000,
    clock,
  })
  agents.push({ agent, thaw })
  return { agent, freeze, thaw }
}

describe('agent connections have a state on the relay', () => {
  const relays = useRelays()

  it('shows an AgentClient ACTIVE, then SUSPECT and ZOMBIE once it stops heartbeating, and reaps it', async () => {
    const r = await relays.start(SHORT)
    const { agent, freeze } = newAgent(r)
    await agent.start()
    await expect.poll(() => gauge(r, 'ACTIVE'), POLL).toBe(1)

    freeze()
    await expect.poll(() => gauge(r, 'SUSPECT'), POLL).toBe(1)
    await expect.poll(() => gauge(r, 'ZOMBIE'), POLL).toBe(1)
    expect(await gauge(r, 'ACTIVE')).toBe(0)
    await expect.poll(() => departures(r, 'reaped'), POLL).toBe(1)
    expect(await gauge(r, 'ZOMBIE')).toBe(0)
    // the routing table holds nothing of it
    await expect.poll(async () => (await r.relay.stats('default')).connections, POLL).toBe(0)
  })

  it('reaps a silent connection with a restricted: NOTICE and a 1008 close naming the same reason', async () => {
    const r = await relays.start(SHORT)
    const agent = makeKeys()
    const c = await authed(r, agent)
    for (let i = 0; i < 3; i++) expect((await publish(c, heartbeat(agent))).accepted).toBe(true)
    c.send(['REQ', 'still-here', { kinds: [1] }])
    await c.next((f) => f[0] === 'EOSE')
    expect((await r.relay.stats('default')).subscriptions).toBe(1)

    const notice = await c.next((f) => f[0] === 'NOTICE')
    expect(notice[1]).toBe('restricted: agent session expired: no heartbeat since its lease lapsed')
    expect(await c.closed).toEqual({ code: 1008, reason: notice[1] })
    expect(await departures(r, 'reaped')).toBe(1)
    expect(await r.relay.stats('default')).toMatchObject({ connections: 0, subscriptions: 0 })
  })

  it('counts departures by cause: a goodbye, a socket closed while its lease is live, one closed after it lapsed', async () => {
    const r = await relays.start({ ...SHORT, agentSessionTimeoutSeconds: 60 })
    const { agent } = newAgent(r)
    await agent.start()
    await expect.poll(() => gauge(r, 'ACTIVE'), POLL).toBe(1)
    await agent.stop()
    await expect.poll(() => departures(r, 'goodbye'), POLL).toBe(1)

    const live = makeKeys()
    const c1 = await authed(r, live)
    expect((await publish(c1, heartbeat(live))).accepted).toBe(true)
    c1.close()
    await expect.poll(() => departures(r, 'socket_closed'), POLL).toBe(1)

    const lapsed = makeKeys()
    const c2 = await authed(r, lapsed)
    expect((await publish(c2, heartbeat(lapsed))).accepted).toBe(true)
    await expect.poll(() => gauge(r, 'ZOMBIE'), POLL).toBe(1)
    c2.close()
    await expect.poll(() => departures(r, 'lease_lapsed'), POLL).toBe(1)
    expect([await departures(r, 'goodbye'), await departures(r, 'socket_closed'), await departures(r, 'reaped')]).toEqual([1, 1, 0])
    expect(await gauge(r, 'ZOMBIE')).toBe(0)
  })
})

describe('renewal stays isolated from bulk work on the same connection', () => {
  const relays = useRelays()

  it('applies every heartbeat on time while the connection floods the relay with events near limits.maxEventBytes', {
    timeout: 60_000,
  }, async () => {
    // 2 s: room for a loaded test machine's latency within the 1.5 intervals asserted
    const heartbeatMs = 2_000
    // the content may fill the event: each event is as large as the relay takes one
    const r = await relays.start({
      presenceHeartbeatSeconds: heartbeatMs / 1000,
      agentOrphanScanSeconds: 0.05,
      limits: { maxContentBytes: 131_072 },
    })
    const agent = makeKeys()
    const c = await authed(r, agent)
    const { maxEventBytes } = r.relay.config.limits
    const bigEvent = (i: number) => signEvent(agent, { kind: 1, content: `${i} ${'x'.repeat(maxEventBytes - 1_000)}` })
    const sample = bigEvent(0)
    expect(sample.raw.length).toBeLessThanOrEqual(maxEventBytes)
    expect(sample.raw.length).toBeGreaterThan(maxEventBytes - 1_100)

    // back to back: the next event goes as soon as one is answered, eight (a whole maxInboundBytesInFlight) on
    // the wire at all times, until the heartbeats are done
    const BEATS = 5
    let sent = 0
    let done = false
    const flood = async () => {
      while (!done) {
        const e = bigEvent(++sent)
        c.send(['EVENT', e.event])
        const answer = await c.ok(e.event.id)
        if (answer[2] !== true) throw new Error(`refused: ${String(answer[3])}`)
      }
    }
    const flooding = Promise.all(Array.from({ length: 8 }, flood))

    // a heartbeat is recorded before its OK is sent, so the relay's gap between two records is at most the
    // time from one's send to the next one's OK
    const beats: { sentMs: number; okMs: number }[] = []
    let suspectSeen = 0
    while (beats.length < BEATS) {
      await new Promise((resolve) =>
        setTimeout(resolve, beats.length === 0 ? 200 : heartbeatMs - (performance.now() - beats.at(-1)!.sentMs)),
      )
      const hb = heartbeat(agent)
      const sentMs = performance.now()
      c.send(['EVENT', hb.event])
      expect((await c.ok(hb.event.id))[2]).toBe(true)
      beats.push({ sentMs, okMs: performance.now() })
      suspectSeen += (await gauge(r, 'SUSPECT')) + (await gauge(r, 'ZOMBIE'))
    }
    done = true
    await flooding

    // the flood really ran beside them: dozens of maximal events a heartbeat
    expect(sent).toBeGreaterThan(BEATS * 20)
    const gapsMs = beats.slice(1).map((b, i) => b.okMs - beats[i]!.sentMs)
    expect(Math.max(...gapsMs)).toBeLessThanOrEqual(1.5 * heartbeatMs)
    expect(suspectSeen).toBe(0)
    expect(await gauge(r, 'ACTIVE')).toBe(1)
  })
})
