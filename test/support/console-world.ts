// Fixed console documents for the browser tests of the page on its own: two nodes (one gone), two communities,
// as many agents as asked, hot connections, supervision rows and a mesh, scoped the way the relay scopes an
// admin's snapshot (their communities only, no mesh).
import type {
  AgentConnectionState,
  AgentRow,
  ConsoleIdentity,
  ConsoleSnapshot,
  ConsoleView,
  HotConnectionRow,
  HotRanking,
  MeshConsoleStatus,
  NodeSample,
  NodeStatus,
  NodeView,
  SupervisionRow,
} from '../../src/protocols/console'

export interface ConsoleWorld {
  operators: Set<string>
  /** admin pubkey → their communities */
  admins: Map<string, string[]>
  communities: string[]
  agents: AgentRow[]
  supervision: SupervisionRow[]
  mesh: (MeshConsoleStatus & { node: string })[]
  snapshot(view: ConsoleView, query: URLSearchParams, identity: ConsoleIdentity, first: boolean): ConsoleSnapshot
}

const STATES: AgentConnectionState[] = ['ACTIVE', 'ACTIVE', 'ACTIVE', 'SUSPECT', 'ZOMBIE']
const hex = (n: number, len = 64) => n.toString(16).padStart(len, '0')

function nodeStatus(node: string, nowMs: number, communities: string[]): NodeStatus {
  return {
    node,
    publishedAtMs: nowMs,
    startedAtMs: nowMs - 3_725_000,
    ready: node !== 'node-b',
    degraded: node === 'node-b' ? ['redis unreachable'] : [],
    connections: 42,
    subscriptions: 97,
    eventsInPerSecond: 12.5,
    eventsOutPerSecond: 80.25,
    refusalsPerSecondByPrefix: { 'rate-limited': 1.5 },
    loopDelayP99Ms: 3.2,
    gcPauses: { count: 1, maxMs: 14 },
    rssBytes: 180 * 1024 * 1024,
    cpuPercent: 23,
    communities: communities.map((id) => ({
      id,
      connections: 21,
      subscriptions: 40,
      agents: { ACTIVE: 3, SUSPECT: 1, ZOMBIE: 1, CLOSED: 0 },
      eventsPerSecondByKind: { '1': 4, '31990': 0.5 },
      refusalsPerSecondByReason: { restricted: 0.2 },
    })),
    hot: [],
    supervision: [],
  }
}

function samplesOf(node: string, nowMs: number): NodeSample[] {
  return Array.from({ length: 300 }, (_, i) => ({
    atMs: nowMs - (300 - i) * 2000,
    connections: 30 + (i % 20),
    eventsInPerSecond: 10 + 5 * Math.sin(i / 10),
    eventsOutPerSecond: 70 + 10 * Math.cos(i / 12),
    loopDelayP99Ms: 2 + (i % 7) / 3,
    rssBytes: (170 + (i % 30)) * 1024 * 1024,
    cpuPercent: 20 + (i % 15),
  })).map((s) => ({ ...s, connections: node === 'node-a' ? s.connections : s.connections / 2 }))
}

function agentRows(count: number, communities: string[], nowMs: number): AgentRow[] {
  return Array.from({ length: count }, (_, i) => ({
    node: i % 2 ? 'node-b' : 'node-a',
    community: communities[i % communities.length]!,
    conn: `c${i}`,
    pubkey: hex(i + 1),
    state: STATES[i % STATES.length]!,
    capabilities: i % 3 ? ['translate'] : ['summarize', 'translate'],
    load: (i % 10) / 10,
    heartbeatAgeMs: i === 0 ? 95_000 : 1000 + (i % 30) * 100,
    leaseRemainingMs: 60_000 - (i % 30) * 1000,
    connectedSinceMs: nowMs - 600_000,
    flagged: i === 0,
  }))
}

function hotRows(communities: string[]): HotConnectionRow[] {
  return Array.from({ length: 20 }, (_, i) => ({
    node: 'node-a',
    conn: `h${i}`,
    community: communities[i % communities.length]!,
    pubkeys: [hex(1000 + i)],
    ip: `127.0.0.${i + 1}`,
    subscriptions: i,
    agentState: i % 4 ? undefined : 'ACTIVE',
    inFramesPerSecond: 200 - i * 5,
    inBytesPerSecond: 40_000 - i * 1000,
    outBytesPerSecond: 90_000 - i * 3000,
  }))
}

function page(rows: AgentRow[], q: URLSearchParams) {
  const state = q.get('state')
  const capability = q.get('capability')
  const offset = Number(q.get('offset') ?? 0)
  const limit = Math.min(500, Number(q.get('limit') ?? 100))
  const matching = rows.filter((r) => (!state || r.state === state) && (!capability || r.capabilities.includes(capability)))
  return { total: matching.length, offset, rows: matching.slice(offset, offset + limit) }
}

export function makeConsoleWorld(opts: { operators: string[]; admins?: [string, string[]][]; agentCount?: number }): ConsoleWorld {
  const communities = ['alpha', 'beta']
  const startMs = Date.now()
  const sent = new WeakMap<ConsoleIdentity, number>()
  const world: ConsoleWorld = {
    operators: new Set(opts.operators),
    admins: new Map(opts.admins ?? []),
    communities,
    agents: agentRows(opts.agentCount ?? 250, communities, startMs),
    supervision: [],
    mesh: [],
    snapshot(view, query, identity, first) {
      const nowMs = Date.now()
      const mine = (c: string) => identity.communities.includes(c)
      const nodes: NodeView[] = ['node-a', 'node-b', 'node-c'].map((n) => ({
        status: nodeStatus(n, n === 'node-c' ? startMs - 10_000 : nowMs, communities.filter(mine)),
        gone: n === 'node-c',
      }))
      const snap: ConsoleSnapshot = { atMs: nowMs, view, nodes }
      if (view === 'overview' && first) snap.samples = { 'node-a': samplesOf('node-a', nowMs), 'node-b': samplesOf('node-b', nowMs) }
      if (view === 'agents')
        snap.agents = page(
          world.agents.filter((r) => mine(r.community)),
          query,
        )
      if (view === 'hot')
        snap.hot = {
          ranking: (query.get('ranking') ?? 'inFramesPerSecond') as HotRanking,
          rows: hotRows(communities).filter((r) => mine(r.community)),
        }
      if (view === 'supervision') {
        const after = first ? -1 : (sent.get(identity) ?? -1)
        snap.supervision = world.supervision.filter((r) => r.seq > after && identity.communities.some((c) => r.path.includes(c)))
        sent.set(identity, world.supervision.at(-1)?.seq ?? -1)
      }
      if (view === 'mesh' && identity.role === 'operator') snap.mesh = world.mesh
      return snap
    },
  }
  return world
}
