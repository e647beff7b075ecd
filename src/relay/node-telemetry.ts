// This node's figures for the console (docs/operating.md#node-status-and-hot-connections): the hot
// connections, sampled once a second by one unref'd timer, and the NodeStatus the status board publishes
// every interval. Everything is read from counters the edge and the actors keep, never asked of an actor
// through its mailbox: an overloaded community must not delay the status that would show it.
import { type ConsoleCounters, CounterRater, round } from '../infra/console/community-counters.js'
import type { HotConnections, MeteredConnection } from '../infra/console/hot-connections.js'
import type { ProcessSampler } from '../infra/console/node-sampler.js'
import type { Metrics } from '../infra/metrics.js'
import {
  AGENT_CONNECTION_STATES,
  type AgentConnectionState,
  type CommunityStatus,
  type MeshConsoleStatus,
  type NodeStatus,
} from '../protocols/console.js'
import type { MeshStatus } from '../protocols/mesh/status.js'
import type { SupervisionRing } from './supervision-ring.js'

const HOT_SAMPLE_MS = 1_000

export interface NodeTelemetryDeps {
  node: string
  startedAtMs: number
  hot: HotConnections
  connections: () => Iterable<MeteredConnection>
  counters: ConsoleCounters
  supervision: SupervisionRing
  process: ProcessSampler
  /** what /health/ready answers */
  health: () => Promise<{ ready: boolean; degraded: string[] }>
  communityIds: () => string[]
  /** a community's agent connections by state, when it tracks them */
  agentCounts?: (community: string, nowMs: number) => Record<AgentConnectionState, number> | undefined
  mesh?: { status(): MeshStatus }
  metrics: Pick<Metrics, 'meshFenceRejections' | 'meshLeasesLost'>
  /** ms since the epoch */
  nowMs: () => number
  /** monotonic ms: the traffic meters' clock and the rates' intervals */
  monotonicMs: () => number
}

export class NodeTelemetry {
  private readonly rater = new CounterRater()
  private timer: ReturnType<typeof setInterval> | undefined
  private lastCollectMs: number

  constructor(private readonly d: NodeTelemetryDeps) {
    this.lastCollectMs = d.monotonicMs()
  }

  start(): void {
    this.timer = setInterval(() => this.d.hot.sample(this.d.connections(), this.d.monotonicMs()), HOT_SAMPLE_MS)
    this.timer.unref()
  }

  stop(): void {
    clearInterval(this.timer)
    this.d.process.stop()
    this.d.supervision.stop()
  }

  async collect(): Promise<NodeStatus> {
    const d = this.d
    const now = d.monotonicMs()
    const seconds = (now - this.lastCollectMs) / 1000
    this.lastCollectMs = now
    const health = await d.health()
    const wallMs = d.nowMs()
    const { communities, node } = this.communitiesOver(seconds, wallMs)
    const mesh = d.mesh ? await this.meshStatus(d.mesh.status()) : undefined
    return {
      node: d.node,
      publishedAtMs: wallMs,
      startedAtMs: d.startedAtMs,
      ready: health.ready,
      degraded: health.degraded,
      connections: node.connections,
      subscriptions: node.subscriptions,
      eventsInPerSecond: round(node.eventsIn),
      eventsOutPerSecond: round(node.eventsOut),
      refusalsPerSecondByPrefix: node.refusals,
      ...d.process.sample(),
      communities,
      hot: d.hot.union(),
      supervision: d.supervision.rows(),
      ...(mesh && { mesh }),
    }
  }

  /** each community's figures over the last `seconds`, and the node's sums of them */
  private communitiesOver(seconds: number, wallMs: number) {
    const d = this.d
    const load = d.hot.communities()
    const communities: CommunityStatus[] = []
    const node = { connections: 0, subscriptions: 0, eventsIn: 0, eventsOut: 0, refusals: {} as Record<string, number> }
    for (const id of d.communityIds()) {
      const r = this.rater.rate(id, d.counters.of(id), seconds)
      const l = load.get(id) ?? { connections: 0, subscriptions: 0 }
      communities.push({
        id,
        connections: l.connections,
        subscriptions: l.subscriptions,
        agents: d.agentCounts?.(id, wallMs) ?? noAgents(),
        eventsPerSecondByKind: r.eventsPerSecondByKind,
        refusalsPerSecondByReason: r.refusalsPerSecondByReason,
      })
      node.connections += l.connections
      node.subscriptions += l.subscriptions
      node.eventsIn += r.eventsInPerSecond
      node.eventsOut += r.eventsOutPerSecond
      for (const [prefix, n] of Object.entries(r.refusalsPerSecondByReason)) node.refusals[prefix] = (node.refusals[prefix] ?? 0) + n
    }
    return { communities, node }
  }

  private async meshStatus(s: MeshStatus): Promise<MeshConsoleStatus> {
    return {
      runtime: s.runtime,
      peers: s.peers,
      sessions: s.sessions.map((x) => ({
        community: x.community,
        session: x.session,
        owner: x.owner,
        generation: x.generation,
        local: x.local,
      })),
      fenceRefusals: await total(this.d.metrics.meshFenceRejections),
      leasesLost: await total(this.d.metrics.meshLeasesLost),
    }
  }
}

/** a labelled counter's sum over its labels */
async function total(counter: { get(): Promise<{ values: { value: number }[] }> }): Promise<number> {
  return (await counter.get()).values.reduce((sum, v) => sum + v.value, 0)
}

const noAgents = () => Object.fromEntries(AGENT_CONNECTION_STATES.map((s) => [s, 0])) as Record<AgentConnectionState, number>
