import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { communityPath } from '../../../src/actors/community/community-actor'
import type { CommunityMsg, CommunityStats, PublishOutcome } from '../../../src/actors/community/messages'
import type { ConnView } from '../../../src/actors/community/subscription-index'
import { ask, createKernel, type Kernel, type TypedRef, tell } from '../../../src/actors/kernel'
import { createCommunityKeys } from '../../../src/infra/community-key'
import type { PresenceStore } from '../../../src/infra/gates/presence'
import { Tenants } from '../../../src/infra/http/tenants'
import { loadConfig } from '../../../src/infra/load-config'
import { createLogger } from '../../../src/infra/log'
import { createMetrics } from '../../../src/infra/metrics'
import { loadRelayKey } from '../../../src/infra/relay-key'
import { seedDefaultCommunity } from '../../../src/infra/store/community-store'
import { createInlineVerifier } from '../../../src/infra/verify/inline-verifier'
import type { OutboundQueue } from '../../../src/infra/ws/outbound-queue'
import { asVerified } from '../../../src/protocols/nip01/event'
import { openBackends } from '../../../src/relay/backends'
import { createCommunities } from '../../../src/relay/communities'
import { makeKeys, signEvent, type TestKeys } from '../../support/events'

/**
 * The default community's actors on a real kernel with SQLite and in-memory presence, their clocks injected:
 * the agent table reads `clock` (monotonic and wall), and the scan is told by the test (its timer is an hour).
 * Connections are views the test plays, recording what the community sends them. Heartbeat 10 s ⇒ SUSPECT
 * past 15 s, ZOMBIE past the 30 s lease, reaped 20 s later.
 */
const WALL_START_MS = 1_700_000_000_000

interface Played {
  view: ConnView
  frames: string[]
  closedWith?: { code: number; reason: string }
}

const cleanup: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step()
})

async function start() {
  const dir = mkdtempSync(join(tmpdir(), 'apiary-agent-scan-'))
  cleanup.push(async () => rmSync(dir, { recursive: true, force: true }))
  const config = loadConfig({
    overrides: {
      dataDir: dir,
      logLevel: 'silent',
      presenceHeartbeatSeconds: 10,
      agentSessionTimeoutSeconds: 20,
      agentOrphanScanSeconds: 3_600,
    },
  })
  const log = createLogger('silent')
  const kernel: Kernel = createKernel()
  const backends = await openBackends(config, log)
  cleanup.push(() => backends.close())
  cleanup.push(() => kernel.shutdown())
  await seedDefaultCommunity(backends.communities)
  const records = await backends.communities.list()
  const key = loadRelayKey(dir, '')
  const metrics = createMetrics()
  const clock = { ms: 0, wall: WALL_START_MS }
  const presence = heldPresence(backends.presence)
  const communities = createCommunities({
    kernel,
    config,
    backends: { ...backends, presence: presence.store },
    verifier: createInlineVerifier(),
    relayKey: key,
    communityKeys: createCommunityKeys(key),
    tenants: new Tenants(records),
    metrics,
    log,
    nowSeconds: () => Math.floor(Date.now() / 1000),
    nowMs: () => clock.ms,
    wallMs: () => clock.wall,
    blockListChanged: () => {},
  })
  communities.start(records)
  const ref = kernel.lookup<CommunityMsg>(communityPath('default')) as TypedRef<CommunityMsg>
  const view = communities.agentConnectionsOf('default')!
  expect(view).toBeDefined()

  const joinAs = (id: string, keys: TestKeys): Played => {
    const played: Played = { frames: [], view: undefined as unknown as ConnView }
    const queue: OutboundQueue = {
      push: (f) => played.frames.push(f) > 0,
      pushControl: (f) => played.frames.push(f) > 0,
      pushPage: (fs) => played.frames.push(...fs) > 0,
      pendingBytes: 0,
      get closed() {
        return played.closedWith !== undefined
      },
      closeAfterFlush: (code, reason) => {
        played.closedWith = { code, reason }
      },
    }
    played.view = { id, ip: '127.0.0.1', queue, authed: new Set([keys.pubkey]), owners: new Map(), subs: new Set(), lose: () => {} }
    tell(ref, { type: 'Join', conn: played.view })
    return played
  }
  const send = (c: Played, keys: TestKeys, kind: number, content: string, tags: string[][] = []) => {
    const { event, raw } = signEvent(keys, { kind, content, tags })
    return ask<CommunityMsg, PublishOutcome>(
      ref,
      (reply) => ({ type: 'Publish', event: asVerified(event), raw, reply, conn: c.view }),
      5_000,
    )
  }
  const heartbeat = (c: Played, keys: TestKeys) => send(c, keys, 20001, 'online')
  const stats = () => ask<CommunityMsg, CommunityStats>(ref, (reply) => ({ type: 'Stats', reply }), 5_000)
  /** the scan, told as its timer would, and waited for through the actor's next answer */
  const scan = async () => {
    tell(ref, { type: 'AgentScan' })
    return stats()
  }
  const after = (ms: number) => {
    clock.ms += ms
    clock.wall += ms
  }
  /** the console's clock: epoch ms */
  const epochNow = () => clock.wall
  const metricText = () => metrics.registry.metrics()
  return { ref, view, communities, presence, join: joinAs, send, heartbeat, stats, scan, after, epochNow, metricText }
}

/** The presence store, with heartbeats (`set`) that wait while held, and a promise of the next one arriving. */
function heldPresence(real: PresenceStore) {
  let gate: Promise<void> | undefined
  let open = () => {}
  let arrived = () => {}
  let nextSet = new Promise<void>((resolve) => {
    arrived = resolve
  })
  const store: PresenceStore = {
    ...real,
    set: async (...args) => {
      arrived()
      await gate
      return real.set(...args)
    },
  }
  return {
    store,
    hold() {
      gate = new Promise<void>((resolve) => {
        open = resolve
      })
      nextSet = new Promise<void>((resolve) => {
        arrived = resolve
      })
    },
    arrival: () => nextSet,
    release() {
      gate = undefined
      open()
    },
  }
}

const sample = (text: string, name: string, labels: string) =>
  Number(new RegExp(`^${name}\\{${labels}\\} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN)

describe('a community moves its agent connections along and reaps the dead', () => {
  it('registers a connection at its first heartbeat, SUSPECT and ZOMBIE as time passes, ACTIVE again at the next', async () => {
    const t = await start()
    const agent = makeKeys()
    const c = t.join('c1', agent)
    expect((await t.heartbeat(c, agent)).accepted).toBe(true)
    expect(t.view.stateOf('c1', t.epochNow())).toBe('ACTIVE')
    expect(t.view.rows(t.epochNow())).toMatchObject([{ conn: 'c1', pubkey: agent.pubkey, connectedSinceMs: WALL_START_MS }])

    t.after(15_001)
    expect(t.view.stateOf('c1', t.epochNow())).toBe('SUSPECT')
    await t.scan()
    expect(sample(await t.metricText(), 'apiary_agent_connections', 'community="default",state="SUSPECT"')).toBe(1)
    t.after(15_000)
    await t.scan()
    expect(t.view.counts(t.epochNow())).toMatchObject({ ACTIVE: 0, SUSPECT: 0, ZOMBIE: 1 })
    expect(sample(await t.metricText(), 'apiary_agent_connections', 'community="default",state="ZOMBIE"')).toBe(1)

    expect((await t.heartbeat(c, agent)).accepted).toBe(true)
    expect(t.view.stateOf('c1', t.epochNow())).toBe('ACTIVE')
    expect(sample(await t.metricText(), 'apiary_agent_connections', 'community="default",state="ACTIVE"')).toBe(1)
  })

  it("takes the capabilities and load of an announcement, which registers its author's connection", async () => {
    const t = await start()
    const agent = makeKeys()
    const c = t.join('c1', agent)
    const tags = [
      ['d', 'apiary-agent'],
      ['c', 'echo'],
      ['load', '0.75'],
    ]
    expect((await t.send(c, agent, 31990, '{"capabilities":[]}', tags)).accepted).toBe(true)
    expect(t.view.rows(t.epochNow())).toMatchObject([{ conn: 'c1', capabilities: ['echo'], load: 0.75, state: 'ACTIVE' }])
  })

  it('reaps a ZOMBIE past lease + session timeout: a restricted: NOTICE, a 1008 close, forgotten at once', async () => {
    const t = await start()
    const agent = makeKeys()
    const c = t.join('c1', agent)
    await t.heartbeat(c, agent)
    t.after(50_000)
    await t.scan()
    expect(c.closedWith).toBeUndefined()
    expect(t.view.stateOf('c1', t.epochNow())).toBe('ZOMBIE')

    t.after(1)
    expect(await t.scan()).toMatchObject({ connections: 0, presenceHolders: 0 })
    const reason = 'restricted: agent session expired: no heartbeat since its lease lapsed'
    expect(c.frames).toContain(JSON.stringify(['NOTICE', reason]))
    expect(c.closedWith).toEqual({ code: 1008, reason })
    expect(t.view.stateOf('c1', t.epochNow())).toBeUndefined()
    const text = await t.metricText()
    expect(sample(text, 'apiary_agent_departures_total', 'cause="reaped"')).toBe(1)
    expect(sample(text, 'apiary_agent_connections', 'community="default",state="ZOMBIE"')).toBe(0)
  })

  it('closes on goodbye, on a Disconnect with a live lease and on one after it lapsed, each counted by its cause', async () => {
    const t = await start()
    const [a, b, z] = [makeKeys(), makeKeys(), makeKeys()]
    const ca = t.join('bye', a)
    const cb = t.join('live', b)
    const cz = t.join('lapsed', z)
    for (const [conn, keys] of [
      [ca, a],
      [cb, b],
      [cz, z],
    ] as const)
      await t.heartbeat(conn, keys)
    expect((await t.send(ca, a, 20001, 'offline')).accepted).toBe(true)
    expect(t.view.stateOf('bye', t.epochNow())).toBeUndefined()
    tell(t.ref, { type: 'Disconnect', connId: 'bye' })
    tell(t.ref, { type: 'Disconnect', connId: 'live' })
    await t.stats()
    t.after(30_001)
    tell(t.ref, { type: 'Disconnect', connId: 'lapsed' })
    await t.stats()

    const text = await t.metricText()
    expect(sample(text, 'apiary_agent_departures_total', 'cause="goodbye"')).toBe(1)
    expect(sample(text, 'apiary_agent_departures_total', 'cause="socket_closed"')).toBe(1)
    expect(sample(text, 'apiary_agent_departures_total', 'cause="lease_lapsed"')).toBe(1)
    expect(t.view.rows(t.epochNow())).toEqual([])
    expect(cb.closedWith).toBeUndefined()
    expect(cz.closedWith).toBeUndefined()
  })

  it("does not register a heartbeat's connection that left before the presence store answered", async () => {
    const t = await start()
    const agent = makeKeys()
    const c = t.join('c1', agent)
    t.presence.hold()
    const answered = t.heartbeat(c, agent)
    await t.presence.arrival()
    tell(t.ref, { type: 'Disconnect', connId: 'c1' })
    await t.stats()
    t.presence.release()
    await answered
    await t.stats()
    expect(t.view.rows(t.epochNow())).toEqual([])
  })

  it('removes its gauge series and its view when the community stops', async () => {
    const t = await start()
    const agent = makeKeys()
    await t.heartbeat(t.join('c1', agent), agent)
    expect(await t.metricText()).toContain('apiary_agent_connections{community="default",state="ACTIVE"} 1')
    expect(await t.communities.archive('default')).toBe(true)
    expect(await t.metricText()).not.toContain('apiary_agent_connections{community="default"')
    expect(t.communities.agentConnectionsOf('default')).toBeUndefined()
  })
})
