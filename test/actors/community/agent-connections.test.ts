import { describe, expect, it } from 'vitest'
import { AgentConnections } from '../../../src/actors/community/agent-connections'
import { createMetrics } from '../../../src/infra/metrics'
import { agentTimingOf } from '../../../src/protocols/agent-connection-state'

/**
 * One community's table of agent connections, on injected clocks (monotonic for heartbeats, wall for when a
 * connection registered) and the real metrics registry. Heartbeat 10 s ⇒ SUSPECT past 15 s, ZOMBIE past the
 * 30 s lease, reaped past 30 s + the 20 s session timeout.
 */
const COMMUNITY = 'agents-table'
const AGENT = 'a'.repeat(64)
const OTHER = 'b'.repeat(64)

function table() {
  const clock = { ms: 5_000, wall: 1_700_000_000_000 }
  const metrics = createMetrics()
  const agents = new AgentConnections({
    community: COMMUNITY,
    timing: agentTimingOf(10, 20),
    nowMs: () => clock.ms,
    wallMs: () => clock.wall,
    metrics,
  })
  const values = async (name: string) => (await metrics.registry.getSingleMetric(name)!.get()).values
  const gauge = async () => {
    const out: Record<string, number> = {}
    for (const v of await values('apiary_agent_connections')) if (v.labels.community === COMMUNITY) out[String(v.labels.state)] = v.value
    return out
  }
  const departures = async () => {
    const out: Record<string, number> = {}
    for (const v of await values('apiary_agent_departures_total')) out[String(v.labels.cause)] = v.value
    return out
  }
  const heartbeatAges = async () => {
    const text = await metrics.registry.getSingleMetricAsString('apiary_agent_heartbeat_age_seconds')
    return Number(/^apiary_agent_heartbeat_age_seconds_count (\S+)$/m.exec(text)?.[1])
  }
  const after = (ms: number) => {
    clock.ms += ms
    clock.wall += ms
  }
  return { clock, agents, gauge, departures, heartbeatAges, after }
}

describe("a community's agent connections", () => {
  it('stays live on a heartbeat the presence store did not take (keepAlive), and keepAlive registers no connection', () => {
    const t = table()
    t.agents.heartbeat('c1', AGENT)
    t.after(25_000)
    expect(t.agents.stateOf('c1', t.clock.ms)).toBe('SUSPECT')
    t.agents.keepAlive('c1')
    expect(t.agents.stateOf('c1', t.clock.ms)).toBe('ACTIVE')
    t.agents.keepAlive('c2')
    expect(t.agents.stateOf('c2', t.clock.ms)).toBeUndefined()
  })

  it('offers ACTIVE connections for jobs, and a SUSPECT one only to keep what it holds (holdsOnly)', () => {
    const t = table()
    t.agents.announced('c1', AGENT, [['c', 'sum']])
    t.agents.heartbeat('c1', AGENT)
    expect(t.agents.candidatesFor('sum')).toEqual([{ conn: 'c1', pubkey: AGENT, concurrency: 1 }])
    t.after(15_001)
    expect(t.agents.candidatesFor('sum')).toEqual([{ conn: 'c1', pubkey: AGENT, concurrency: 1, holdsOnly: true }])
    t.after(15_000)
    expect(t.agents.candidatesFor('sum')).toEqual([])
  })

  it('is ACTIVE from its first heartbeat, SUSPECT past 1.5 intervals, ZOMBIE past its lease, ACTIVE again on a heartbeat', async () => {
    const t = table()
    t.agents.heartbeat('c1', AGENT)
    expect(t.agents.stateOf('c1', t.clock.ms)).toBe('ACTIVE')
    expect(await t.gauge()).toEqual({ ACTIVE: 1, SUSPECT: 0, ZOMBIE: 0 })

    t.after(15_001)
    expect(t.agents.stateOf('c1', t.clock.ms)).toBe('SUSPECT')
    // the gauge moves with the scan
    expect(await t.gauge()).toEqual({ ACTIVE: 1, SUSPECT: 0, ZOMBIE: 0 })
    expect(t.agents.scan()).toEqual([])
    expect(await t.gauge()).toEqual({ ACTIVE: 0, SUSPECT: 1, ZOMBIE: 0 })

    t.after(15_000)
    expect(t.agents.scan()).toEqual([])
    expect(t.agents.counts(t.clock.ms)).toEqual({ ACTIVE: 0, SUSPECT: 0, ZOMBIE: 1, CLOSED: 0 })
    expect(await t.gauge()).toEqual({ ACTIVE: 0, SUSPECT: 0, ZOMBIE: 1 })

    t.agents.heartbeat('c1', AGENT)
    expect(t.agents.stateOf('c1', t.clock.ms)).toBe('ACTIVE')
    expect(await t.gauge()).toEqual({ ACTIVE: 1, SUSPECT: 0, ZOMBIE: 0 })
  })

  it('observes the time since the previous heartbeat of the same connection, not before its first', async () => {
    const t = table()
    t.agents.heartbeat('c1', AGENT)
    expect(await t.heartbeatAges()).toBe(0)
    t.after(10_000)
    t.agents.heartbeat('c1', AGENT)
    t.after(12_000)
    t.agents.heartbeat('c1', AGENT)
    expect(await t.heartbeatAges()).toBe(2)
  })

  it('answers a ZOMBIE due for reaping only past lease + session timeout, and counts it reaped once closed', async () => {
    const t = table()
    t.agents.heartbeat('c1', AGENT)
    t.after(50_000)
    expect(t.agents.scan()).toEqual([])
    t.after(1)
    expect(t.agents.scan()).toEqual(['c1'])
    t.agents.reaped('c1')
    expect(t.agents.stateOf('c1', t.clock.ms)).toBeUndefined()
    expect(await t.departures()).toEqual({ reaped: 1 })
    expect(await t.gauge()).toEqual({ ACTIVE: 0, SUSPECT: 0, ZOMBIE: 0 })
  })

  it('counts each way of leaving by its cause, once: goodbye, socket closed with a live lease, lease lapsed', async () => {
    const t = table()
    for (const conn of ['bye', 'live', 'lapsed']) t.agents.heartbeat(conn, AGENT)
    t.agents.goodbye('bye')
    t.agents.left('bye')
    t.after(30_000)
    t.agents.left('live')
    t.after(1)
    t.agents.left('lapsed')
    t.agents.left('never-registered')
    expect(await t.departures()).toEqual({ goodbye: 1, socket_closed: 1, lease_lapsed: 1 })
    expect(t.agents.size).toBe(0)
    expect(await t.gauge()).toEqual({ ACTIVE: 0, SUSPECT: 0, ZOMBIE: 0 })
  })

  it("registers a connection on its announcement, with the latest announcement's capabilities and load", () => {
    const t = table()
    t.agents.announced('c1', AGENT, [
      ['d', 'apiary-agent'],
      ['c', 'echo'],
      ['load', '0.25'],
    ])
    t.after(1_000)
    t.agents.heartbeat('c2', AGENT)
    t.agents.announced(undefined, AGENT, [
      ['c', 'translate'],
      ['c', 'echo'],
      ['load', '0.5'],
    ])
    t.agents.announced(undefined, OTHER, [['c', 'other']])
    const rows = t.agents.rows(t.clock.ms)
    expect(rows.map((r) => [r.conn, r.capabilities, r.load])).toEqual([
      ['c1', ['translate', 'echo'], 0.5],
      ['c2', ['translate', 'echo'], 0.5],
    ])
    expect(rows[0]).toMatchObject({
      pubkey: AGENT,
      state: 'ACTIVE',
      heartbeatAgeMs: 1_000,
      leaseRemainingMs: 29_000,
      connectedSinceMs: 1_700_000_000_000,
      flagged: false,
    })
  })

  it('leaves a load outside 0..1 out of its row', () => {
    const t = table()
    t.agents.announced('c1', AGENT, [['load', '7']])
    expect(t.agents.rows(t.clock.ms)[0]?.load).toBeUndefined()
  })

  it('never flags a row whose state it decided at the time asked for, whatever that time', () => {
    const t = table()
    t.agents.heartbeat('c1', AGENT)
    // a reader whose clock runs far behind the table's sees a heartbeat from its future: honest, not flagged
    expect(t.agents.rows(t.clock.ms - 40_000)[0]).toMatchObject({ state: 'ACTIVE', flagged: false })
    expect(t.agents.rows(t.clock.ms + 31_000)[0]).toMatchObject({ state: 'ZOMBIE', flagged: false })
  })

  it("removes its community's gauge series when disposed", async () => {
    const t = table()
    t.agents.heartbeat('c1', AGENT)
    t.agents.dispose()
    expect(await t.gauge()).toEqual({})
  })
})
