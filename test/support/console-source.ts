// A ConsoleSource with fixed rows for the console's HTTP tests: two communities on two nodes, a few agents, hot
// connections and supervision events, and NIP-86 bans kept in memory. A test adds supervision rows or nodes as
// the relay would publish them.

import type { AgentQuery, ConsoleSource } from '../../src/infra/http/console/console-source'
import type { AgentRow, HotConnectionRow, NodeSample, NodeStatus, NodeView, SupervisionRow } from '../../src/protocols/console'
import type { Nip86Request, Nip86Response } from '../../src/protocols/nip86/methods'

export interface FakeConsoleSource extends ConsoleSource {
  /** communities by id, with their admins */
  admins: Map<string, string[]>
  operators: Set<string>
  statuses: NodeStatus[]
  sampleRows: Record<string, NodeSample[]>
  agentRows: AgentRow[]
  /** what manage was asked, in order */
  calls: { community: string; pubkey: string; request: Nip86Request }[]
  bans: Map<string, Set<string>>
  watched: number
  addSupervision(node: string, row: Omit<SupervisionRow, 'node' | 'seq'>): SupervisionRow
}

const agent = (node: string, community: string, n: number, state: AgentRow['state']): AgentRow => ({
  node,
  community,
  conn: `${node}-c${n}`,
  pubkey: String(n).padStart(64, 'a'),
  state,
  capabilities: n % 2 === 0 ? ['translate'] : ['summarise'],
  heartbeatAgeMs: 1_000,
  leaseRemainingMs: 40_000,
  connectedSinceMs: 1_700_000_000_000,
  flagged: false,
})

const hot = (node: string, community: string, n: number): HotConnectionRow => ({
  node,
  conn: `${node}-h${n}`,
  community,
  pubkeys: [],
  ip: `192.0.2.${n}`,
  subscriptions: 1,
  inFramesPerSecond: 100 - n,
  inBytesPerSecond: 1_000,
  outBytesPerSecond: 2_000,
})

function status(node: string, communities: string[]): NodeStatus {
  return {
    node,
    publishedAtMs: 1_700_000_000_000,
    startedAtMs: 1_699_999_000_000,
    ready: true,
    degraded: [],
    connections: 3,
    subscriptions: 2,
    eventsInPerSecond: 1,
    eventsOutPerSecond: 2,
    refusalsPerSecondByPrefix: {},
    loopDelayP99Ms: 1,
    gcPauses: { count: 0, maxMs: 0 },
    rssBytes: 1e8,
    cpuPercent: 3,
    communities: communities.map((id) => ({
      id,
      connections: 1,
      subscriptions: 1,
      agents: { ACTIVE: 1, SUSPECT: 0, ZOMBIE: 0, CLOSED: 0 },
      eventsPerSecondByKind: {},
      refusalsPerSecondByReason: {},
    })),
    hot: communities.map((c, i) => hot(node, c, i)),
    supervision: [],
    mesh: { runtime: node, peers: [], sessions: [], fenceRefusals: 0, leasesLost: 0 },
  }
}

/** Nodes `n1` and `n2` serving `communities` (their admins given), every agent state on each. */
export function createFakeConsoleSource(admins: Record<string, string[]>, operators: string[]): FakeConsoleSource {
  const ids = Object.keys(admins)
  const seqs = new Map<string, number>()
  const src: FakeConsoleSource = {
    node: 'n1',
    admins: new Map(Object.entries(admins)),
    operators: new Set(operators),
    statuses: [status('n1', ids), status('n2', ids)],
    sampleRows: { n1: [1, 2, 3].map((i) => sample(i * 1_000)), n2: [sample(1_000)] },
    agentRows: ids.flatMap((c) => (['ACTIVE', 'SUSPECT', 'ZOMBIE'] as const).map((s, i) => agent('n1', c, ids.indexOf(c) * 10 + i, s))),
    calls: [],
    bans: new Map(),
    watched: 0,
    nodes: () => src.statuses.map((s): NodeView => ({ status: s, gone: false })),
    samples: (afterMs) =>
      Object.fromEntries(Object.entries(src.sampleRows).map(([n, points]) => [n, points.filter((p) => p.atMs > afterMs)])),
    agents: (q: AgentQuery) => {
      const rows = src.agentRows.filter(
        (r) =>
          (q.communities === 'all' || q.communities.has(r.community)) &&
          (q.state === undefined || r.state === q.state) &&
          (q.capability === undefined || r.capabilities.includes(q.capability)),
      )
      return { total: rows.length, rows: rows.slice(q.offset, q.offset + q.limit) }
    },
    hot: (_ranking, communities) => src.statuses.flatMap((s) => s.hot).filter((h) => communities === 'all' || communities.has(h.community)),
    watchAgents: () => {
      src.watched++
    },
    communityIds: () => [...src.admins.keys()],
    adminsOf: (c) => src.admins.get(c) ?? [],
    isOperator: (p) => src.operators.has(p),
    manage: async (community, pubkey, request) => {
      src.calls.push({ community, pubkey, request })
      return manageInMemory(src.bans, community, request)
    },
    addSupervision(node, row) {
      const seq = (seqs.get(node) ?? 0) + 1
      seqs.set(node, seq)
      const full = { ...row, node, seq }
      src.statuses.find((s) => s.node === node)?.supervision.push(full)
      return full
    },
  }
  return src
}

function manageInMemory(bans: Map<string, Set<string>>, community: string, request: Nip86Request): Nip86Response {
  const banned = bans.get(community) ?? new Set<string>()
  bans.set(community, banned)
  const [pubkey] = request.params
  if (request.method === 'banpubkey' && typeof pubkey === 'string') banned.add(pubkey)
  else if (request.method === 'unbanpubkey' && typeof pubkey === 'string') banned.delete(pubkey)
  else if (request.method === 'listbannedpubkeys') return { result: [...banned].map((p) => ({ pubkey: p, reason: '' })) }
  else return { result: null, error: `invalid: ${request.method} is not kept by this fake` }
  return { result: true }
}

function sample(atMs: number): NodeSample {
  return { atMs, connections: 3, eventsInPerSecond: 1, eventsOutPerSecond: 2, loopDelayP99Ms: 1, rssBytes: 1e8, cpuPercent: 3 }
}
