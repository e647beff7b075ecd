// Part of the composition root: the console's side of one node, started after the gateway. The hot
// connections and the process figures, the supervision ring, this node's status on the board (Redis in a
// cluster, memory on one node) and the ConsoleSource the console's HTTP side reads.
import type { Kernel } from '../actors/kernel/index.js'
import type { Config } from '../infra/config.js'
import { ClusterBoard } from '../infra/console/cluster-board.js'
import type { ConsoleCounters } from '../infra/console/community-counters.js'
import { HotConnections, type MeteredConnection } from '../infra/console/hot-connections.js'
import { startProcessSampler } from '../infra/console/node-sampler.js'
import { createRedisStatusBoard } from '../infra/console/redis-status-board.js'
import { createMemoryStatusBoard } from '../infra/console/status-board.js'
import type { ConsoleSource } from '../infra/http/console/console-source.js'
import type { ManagementOps } from '../infra/http/nip86/methods.js'
import type { Tenants } from '../infra/http/tenants.js'
import type { Logger } from '../infra/log.js'
import type { Metrics } from '../infra/metrics.js'
import type { AgentConnectionsView } from '../protocols/console.js'
import type { MeshStatus } from '../protocols/mesh/status.js'
import type { Backends } from './backends.js'
import { createConsoleSource } from './console-source.js'
import { NodeTelemetry } from './node-telemetry.js'
import { keepSupervision } from './supervision-ring.js'

export interface NodeConsoleDeps {
  config: Config
  /** the relay key's pubkey: the nodes sharing it are one cluster, one board */
  cluster: string
  kernel: Kernel
  backends: Pick<Backends, 'nodeId' | 'mode' | 'redis'>
  connections: () => Iterable<MeteredConnection>
  counters: ConsoleCounters
  tenants: Tenants
  operators: ReadonlySet<string>
  health: () => Promise<{ ready: boolean; degraded: string[] }>
  mesh?: { status(): MeshStatus }
  agentConnectionsOf?: (community: string) => AgentConnectionsView | undefined
  ops: ManagementOps
  metrics: Metrics
  log: Logger
}

export interface NodeConsole {
  source: ConsoleSource
  stop(): Promise<void>
}

export function startNodeConsole(d: NodeConsoleDeps): NodeConsole {
  const node = d.backends.nodeId
  const nowMs = () => Date.now()
  const monotonicMs = () => performance.now()
  const hot = new HotConnections({
    node,
    // the agent views take wall-clock time, as their rows' times are (the meters' clock is monotonic)
    agentStateOf: (community, conn) => d.agentConnectionsOf?.(community)?.stateOf(conn, nowMs()),
  })
  const supervision = keepSupervision(d.kernel.supervision$, node, nowMs)
  const telemetry = new NodeTelemetry({
    node,
    startedAtMs: nowMs(),
    hot,
    connections: d.connections,
    counters: d.counters,
    supervision,
    process: startProcessSampler(monotonicMs),
    health: d.health,
    communityIds: () => d.tenants.ids(),
    agentCounts: (community, at) => d.agentConnectionsOf?.(community)?.counts(at),
    mesh: d.mesh,
    metrics: d.metrics,
    nowMs,
    monotonicMs,
  })
  const statusBoard =
    d.backends.mode === 'cluster' && d.backends.redis ? createRedisStatusBoard(d.backends.redis, d.cluster) : createMemoryStatusBoard()
  const board = new ClusterBoard({
    board: statusBoard,
    node,
    intervalMs: d.config.console.statusIntervalMs,
    nowMs,
    collect: () => telemetry.collect(),
    // called from the first tick on, after `source` exists
    agentRows: () => source.agentRowsHere(),
    log: d.log,
  })
  const source = createConsoleSource({
    node,
    board,
    hot,
    tenants: d.tenants,
    operators: d.operators,
    agentConnectionsOf: d.agentConnectionsOf,
    supervisionHere: () => supervision.rows(),
    ops: d.ops,
    log: d.log,
    nowMs,
  })
  telemetry.start()
  board.start()
  return {
    source,
    async stop() {
      await board.stop()
      telemetry.stop()
    },
  }
}
