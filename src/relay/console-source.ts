// The console's view of the cluster (ConsoleSource, infra/http/console/console-source.ts): the status board's
// nodes and charts, agent rows from every node (this node's current, the others' as they last published
// them), the cluster's hot connections, the communities and their admins, and the NIP-86 methods called on
// behalf of a signed-in identity with the checks the NIP-86 endpoint makes.
import type { ClusterBoard } from '../infra/console/cluster-board.js'
import { type HotConnections, mergeHot } from '../infra/console/hot-connections.js'
import type { AgentQuery, ConsoleSource } from '../infra/http/console/console-source.js'
import { callMethod, canManage, isAllowed, type ManagementOps } from '../infra/http/nip86/methods.js'
import type { Tenants } from '../infra/http/tenants.js'
import type { Logger } from '../infra/log.js'
import type { AgentConnectionsView, AgentRow, HotConnectionRow, HotRanking, NodeView, SupervisionRow } from '../protocols/console.js'
import { toNip86Error } from '../protocols/nip86/methods.js'
import { reason } from '../protocols/reasons.js'

export interface ConsoleSourceDeps {
  node: string
  board: ClusterBoard
  hot: HotConnections
  tenants: Tenants
  operators: ReadonlySet<string>
  /** a community's agent connections on this node, when it tracks them */
  agentConnectionsOf?: (community: string) => AgentConnectionsView | undefined
  /**
   * this node's supervision events as they happen: its published status is up to an interval old, and a crash
   * should reach a console on this node within a second
   */
  supervisionHere?: () => SupervisionRow[]
  ops: ManagementOps
  log: Logger
  /** ms since the epoch */
  nowMs: () => number
}

export function createConsoleSource(d: ConsoleSourceDeps): ConsoleSource & { agentRowsHere(): AgentRow[] } {
  const visible = (communities: ReadonlySet<string> | 'all', community: string) => communities === 'all' || communities.has(community)

  function agentRowsHere(): AgentRow[] {
    const now = d.nowMs()
    const rows: AgentRow[] = []
    for (const community of d.tenants.ids()) {
      const view = d.agentConnectionsOf?.(community)
      if (view) for (const r of view.rows(now)) rows.push({ ...r, node: d.node, community })
    }
    return rows
  }

  return {
    node: d.node,
    nodes: () => withLiveSupervision(d.board.nodes(), d.node, d.supervisionHere),
    samples: (afterMs) => d.board.samples(afterMs),
    agentRowsHere,
    agents(q: AgentQuery) {
      const all = [agentRowsHere(), ...[...d.board.agentsElsewhere()].filter(([node]) => node !== d.node).map(([, rows]) => rows)].flat()
      const rows = all.filter(
        (r) =>
          visible(q.communities, r.community) &&
          (q.state === undefined || r.state === q.state) &&
          (q.capability === undefined || r.capabilities.includes(q.capability)),
      )
      rows.sort((a, b) => a.node.localeCompare(b.node) || a.community.localeCompare(b.community) || a.pubkey.localeCompare(b.pubkey))
      return { total: rows.length, rows: rows.slice(q.offset, q.offset + q.limit) }
    },
    hot(ranking: HotRanking, communities) {
      const rows: HotConnectionRow[] = [...d.hot.rows(ranking)]
      for (const v of d.board.nodes()) if (!v.gone && v.status.node !== d.node) rows.push(...v.status.hot)
      return mergeHot(
        rows.filter((r) => visible(communities, r.community)),
        ranking,
      )
    },
    watchAgents: () => d.board.watchAgents(),
    communityIds: () => d.tenants.ids(),
    adminsOf: (community) => d.tenants.byId(community)?.admins ?? [],
    isOperator: (pubkey) => d.operators.has(pubkey),
    async manage(community, pubkey, request) {
      const record = d.tenants.byId(community)
      if (!record) return toNip86Error(reason('invalid', 'unknown community'))
      const caller = { pubkey, operator: d.operators.has(pubkey) }
      if (!canManage(record, caller))
        return toNip86Error(reason('restricted', "only this community's admins and relay operators may manage it"))
      if (!isAllowed(request.method, caller)) return toNip86Error(reason('restricted', `only relay operators may call ${request.method}`))
      d.log.info({ community, by: pubkey, method: request.method }, 'console: management call')
      return callMethod(d.ops, d.log, community, caller, request)
    },
  }
}

/** The board's nodes with this node's supervision rows as they are now. */
function withLiveSupervision(nodes: NodeView[], here: string, rows: (() => SupervisionRow[]) | undefined): NodeView[] {
  if (rows === undefined) return nodes
  return nodes.map((v) => (v.status.node === here ? { ...v, status: { ...v.status, supervision: rows() } } : v))
}
