// The status board of a cluster in Redis (keys in infra/redis/keys.ts): one key per node holding its latest
// status, a sorted set of the nodes by when they last published (trimmed on every publish), the agent rows
// of a node under a key of their own, and the watch flag. Every key expires.
import type { AgentRow, NodeStatus } from '../../protocols/console.js'
import type { RedisClient } from '../redis/connect.js'
import { consoleAgentsKey, consoleNodeKey, consoleNodesKey, consoleWatchAgentsKey } from '../redis/keys.js'
import type { StatusBoard } from './status-board.js'

/** `cluster`: the relay key's pubkey, which every node of one cluster shares */
export function createRedisStatusBoard(redis: RedisClient, cluster: string): StatusBoard {
  const nodesKey = consoleNodesKey(cluster)
  const watchKey = consoleWatchAgentsKey(cluster)
  const nodeKey = (node: string) => consoleNodeKey(cluster, node)
  const agentsKey = (node: string) => consoleAgentsKey(cluster, node)
  return {
    async publish(status, agents, ttlMs) {
      const m = redis.multi()
      m.set(nodeKey(status.node), JSON.stringify(status), 'PX', ttlMs)
      m.zadd(nodesKey, status.publishedAtMs, status.node)
      m.zremrangebyscore(nodesKey, '-inf', `(${status.publishedAtMs - ttlMs}`)
      m.pexpire(nodesKey, ttlMs)
      if (agents) m.set(agentsKey(status.node), JSON.stringify(agents), 'PX', ttlMs)
      await m.exec()
    },
    async statuses(sinceMs) {
      const nodes = await redis.zrangebyscore(nodesKey, sinceMs, '+inf')
      if (nodes.length === 0) return []
      const values = await redis.mget(nodes.map(nodeKey))
      const out: NodeStatus[] = []
      for (const v of values) {
        const s = v === null ? undefined : parseJson<NodeStatus>(v)
        if (s !== undefined && s.publishedAtMs >= sinceMs) out.push(s)
      }
      return out
    },
    async agents(nodes) {
      const out = new Map<string, AgentRow[]>()
      if (nodes.length === 0) return out
      const values = await redis.mget(nodes.map(agentsKey))
      for (const [i, v] of values.entries()) {
        const rows = v === null ? undefined : parseJson<AgentRow[]>(v)
        if (Array.isArray(rows)) out.set(nodes[i]!, rows)
      }
      return out
    },
    async watchAgents(ttlMs) {
      await redis.set(watchKey, '1', 'PX', ttlMs)
    },
    async agentsWatched() {
      return (await redis.exists(watchKey)) === 1
    },
  }
}

/** what our own nodes wrote; anything else (a node of a build with another shape, a stray key) is skipped */
function parseJson<T>(text: string): T | undefined {
  try {
    return JSON.parse(text) as T
  } catch {
    return undefined
  }
}
