// Where the nodes of a cluster leave their status for one another's consoles (docs/operating.md#node-status-and-hot-connections):
// Redis in cluster mode (redis-status-board.ts), this process's memory on one node. Each node writes its
// own status every interval and reads everyone's; its agent rows go up only while some console watches
// agents, so a cluster nobody looks at pays nothing for them. Every entry expires.
import type { AgentRow, NodeStatus } from '../../protocols/console.js'

export interface StatusBoard {
  /** `agents`: this node's agent rows, when a console watches them; every entry lives `ttlMs` */
  publish(status: NodeStatus, agents: AgentRow[] | undefined, ttlMs: number): Promise<void>
  /** every node's latest status published at or after `sinceMs` (ms since the epoch) */
  statuses(sinceMs: number): Promise<NodeStatus[]>
  /** the agent rows these nodes published while watched (a node absent: none, or expired) */
  agents(nodes: readonly string[]): Promise<Map<string, AgentRow[]>>
  /** some console shows agents: the flag holds for `ttlMs` */
  watchAgents(ttlMs: number): Promise<void>
  agentsWatched(): Promise<boolean>
}

interface Entry<T> {
  value: T
  expiresAtMs: number
}

/** One node's board: its own status only, unless the tests share one between several nodes. */
export function createMemoryStatusBoard(nowMs: () => number = Date.now): StatusBoard {
  const nodes = new Map<string, Entry<NodeStatus>>()
  const agents = new Map<string, Entry<AgentRow[]>>()
  let watchUntilMs = 0
  const live = <T>(e: Entry<T> | undefined) => (e !== undefined && e.expiresAtMs > nowMs() ? e.value : undefined)
  return {
    async publish(status, rows, ttlMs) {
      const expiresAtMs = nowMs() + ttlMs
      nodes.set(status.node, { value: status, expiresAtMs })
      if (rows) agents.set(status.node, { value: rows, expiresAtMs })
    },
    async statuses(sinceMs) {
      const out: NodeStatus[] = []
      for (const [node, e] of nodes) {
        const s = live(e)
        if (s === undefined) nodes.delete(node)
        else if (s.publishedAtMs >= sinceMs) out.push(s)
      }
      return out
    },
    async agents(wanted) {
      const out = new Map<string, AgentRow[]>()
      for (const node of wanted) {
        const rows = live(agents.get(node))
        if (rows) out.set(node, rows)
      }
      return out
    },
    async watchAgents(ttlMs) {
      watchUntilMs = nowMs() + ttlMs
    },
    async agentsWatched() {
      return watchUntilMs > nowMs()
    },
  }
}
