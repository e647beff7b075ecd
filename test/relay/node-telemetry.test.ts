import { Subject } from 'rxjs'
import { describe, expect, it } from 'vitest'
import type { SupervisionEvent } from '../../src/actors/kernel'
import { ConsoleCounters } from '../../src/infra/console/community-counters'
import { HotConnections, type MeteredConnection } from '../../src/infra/console/hot-connections'
import { startProcessSampler } from '../../src/infra/console/node-sampler'
import { createMetrics } from '../../src/infra/metrics'
import { TrafficMeter } from '../../src/infra/ws/traffic-meter'
import { NodeTelemetry } from '../../src/relay/node-telemetry'
import { keepSupervision } from '../../src/relay/supervision-ring'

const RUNTIME = 'ab'.repeat(32)

function setup() {
  const clock = { wall: 1_700_000_000_000, mono: 0 }
  const counters = new ConsoleCounters()
  const metrics = createMetrics()
  const hot = new HotConnections({ node: 'n1' })
  const conns: MeteredConnection[] = ['c1', 'c1', 'c2'].map((community, i) => ({
    id: String(i),
    community,
    ip: '10.0.0.1',
    meter: new TrafficMeter(0),
    authed: new Set<string>(),
    subs: new Set(i === 0 ? ['a', 'b'] : ['a']),
  }))
  const process = startProcessSampler(() => clock.mono)
  const telemetry = new NodeTelemetry({
    node: 'n1',
    startedAtMs: clock.wall,
    hot,
    connections: () => conns,
    counters,
    supervision: keepSupervision(new Subject<SupervisionEvent>(), 'n1', () => clock.wall),
    process,
    health: async () => ({ ready: false, degraded: ['redis'] }),
    communityIds: () => ['c1', 'c2'],
    mesh: {
      status: () => ({
        runtime: RUNTIME,
        draining: false,
        peers: [],
        sessions: [{ community: 'c1', session: 'channel:general', kind: 'channel', generation: 3, owner: RUNTIME, local: true }],
      }),
    },
    metrics,
    nowMs: () => clock.wall,
    monotonicMs: () => clock.mono,
  })
  return { clock, counters, metrics, hot, conns, telemetry, stop: () => telemetry.stop() }
}

describe("a node's status", () => {
  it('gives events by kind, refusals by prefix and deliveries per second over the interval, per community and summed', async () => {
    const { clock, counters, hot, conns, telemetry, stop } = setup()
    try {
      await telemetry.collect()
      for (let i = 0; i < 10; i++) counters.of('c1').accepted(1)
      for (let i = 0; i < 4; i++) counters.of('c2').accepted(7)
      counters.of('c1').refused('rate-limited')
      counters.of('c2').refused('rate-limited')
      counters.of('c2').refused('restricted')
      counters.of('c1').deliveredOut(20)
      clock.mono += 2_000
      hot.sample(conns, clock.mono)
      const s = await telemetry.collect()
      expect(s.communities.find((c) => c.id === 'c1')).toMatchObject({
        connections: 2,
        subscriptions: 3,
        eventsPerSecondByKind: { 1: 5 },
        refusalsPerSecondByReason: { 'rate-limited': 0.5 },
      })
      expect(s.communities.find((c) => c.id === 'c2')?.eventsPerSecondByKind).toEqual({ 7: 2 })
      expect(s).toMatchObject({
        connections: 3,
        subscriptions: 4,
        eventsInPerSecond: 7,
        eventsOutPerSecond: 10,
        ready: false,
        degraded: ['redis'],
      })
      expect(s.refusalsPerSecondByPrefix).toEqual({ 'rate-limited': 1, restricted: 0.5 })
      clock.mono += 2_000
      expect((await telemetry.collect()).eventsInPerSecond).toBe(0)
    } finally {
      stop()
    }
  })

  it("carries the mesh's sessions and its fence refusals and lost leases from the metrics", async () => {
    const { metrics, telemetry, stop } = setup()
    try {
      metrics.meshFenceRejections.inc({ reason: 'stale' })
      metrics.meshFenceRejections.inc({ reason: 'no-lease' })
      metrics.meshLeasesLost.inc({ reason: 'fenced' })
      const s = await telemetry.collect()
      expect(s.mesh).toMatchObject({ runtime: RUNTIME, fenceRefusals: 2, leasesLost: 1 })
      expect(s.mesh?.sessions).toEqual([{ community: 'c1', session: 'channel:general', owner: RUNTIME, generation: 3, local: true }])
    } finally {
      stop()
    }
  })
})
