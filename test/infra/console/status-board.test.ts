import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterEach, describe, expect, it } from 'vitest'
import { ClusterBoard, GONE_AFTER_INTERVALS, KEPT_MS } from '../../../src/infra/console/cluster-board'
import { createRedisStatusBoard } from '../../../src/infra/console/redis-status-board'
import { createMemoryStatusBoard, type StatusBoard } from '../../../src/infra/console/status-board'
import type { AgentRow, NodeStatus } from '../../../src/protocols/console'
import { REDIS_URL } from '../../support/relay-fixtures'

const INTERVAL_MS = 2_000
const quiet = { warn: () => {} }

const statusOf = (node: string, atMs: number, connections = 1): NodeStatus => ({
  node,
  publishedAtMs: atMs,
  startedAtMs: 0,
  ready: true,
  degraded: [],
  connections,
  subscriptions: 0,
  eventsInPerSecond: 0,
  eventsOutPerSecond: 0,
  refusalsPerSecondByPrefix: {},
  loopDelayP99Ms: 1,
  gcPauses: { count: 0, maxMs: 0 },
  rssBytes: 1,
  cpuPercent: 1,
  communities: [],
  hot: [],
  supervision: [],
})

const agentOf = (node: string): AgentRow => ({
  node,
  community: 'c1',
  conn: '1',
  pubkey: 'a'.repeat(64),
  state: 'ACTIVE',
  capabilities: [],
  heartbeatAgeMs: 0,
  leaseRemainingMs: 1000,
  connectedSinceMs: 0,
  flagged: false,
})

interface Backend {
  name: string
  open(clock: { now: number }): StatusBoard
}

const redisClients: Redis[] = []
afterEach(async () => {
  for (const r of redisClients.splice(0)) {
    const keys = await r.keys(`${r.options.keyPrefix}*`)
    if (keys.length > 0) await new Redis(REDIS_URL).del(...keys).then(() => {})
    r.disconnect()
  }
})

const backends: Backend[] = [
  { name: 'memory', open: (clock) => createMemoryStatusBoard(() => clock.now) },
  {
    name: 'redis',
    open: () => {
      const redis = new Redis(REDIS_URL, { keyPrefix: `test-board-${randomBytes(4).toString('hex')}:` })
      redisClients.push(redis)
      return createRedisStatusBoard(redis, randomBytes(32).toString('hex'))
    },
  },
]

describe.each(backends)('the console status board ($name)', (backend) => {
  const setup = () => {
    const clock = { now: 1_700_000_000_000 }
    const board = backend.open(clock)
    const nodeBoard = (node: string, connections = 1) =>
      new ClusterBoard({
        board,
        node,
        intervalMs: INTERVAL_MS,
        nowMs: () => clock.now,
        collect: async () => statusOf(node, clock.now, connections),
        agentRows: () => [agentOf(node)],
        log: quiet,
      })
    return { clock, board, nodeBoard }
  }

  it('lists every node that publishes on each node, with its chart points', async () => {
    const { clock, nodeBoard } = setup()
    const a = nodeBoard('node-a', 3)
    const b = nodeBoard('node-b', 5)
    for (let i = 0; i < 3; i++) {
      await a.tick()
      await b.tick()
      clock.now += INTERVAL_MS
    }
    await a.tick()
    expect(a.nodes().map((v) => [v.status.node, v.status.connections, v.gone])).toEqual([
      ['node-a', 3, false],
      ['node-b', 5, false],
    ])
    expect(a.samples(0)['node-b']?.map((s) => s.connections)).toEqual([5, 5, 5])
    expect(a.samples(clock.now - INTERVAL_MS - 1)['node-a']).toHaveLength(2)
  })

  it('shows a node that stopped publishing as gone after three intervals, and forgets it after 10 minutes', async () => {
    const { clock, nodeBoard } = setup()
    const a = nodeBoard('node-a')
    const b = nodeBoard('node-b')
    await a.tick()
    await b.tick()
    // b stops; a goes on
    for (let i = 0; i < GONE_AFTER_INTERVALS; i++) {
      clock.now += INTERVAL_MS
      await a.tick()
    }
    expect(a.nodes().find((v) => v.status.node === 'node-b')?.gone).toBe(false)
    clock.now += INTERVAL_MS
    await a.tick()
    expect(a.nodes().map((v) => [v.status.node, v.gone])).toEqual([
      ['node-a', false],
      ['node-b', true],
    ])
    // a console started now still sees it gone
    const c = nodeBoard('node-c')
    await c.tick()
    expect(c.nodes().find((v) => v.status.node === 'node-b')?.gone).toBe(true)
    clock.now += KEPT_MS + INTERVAL_MS
    await a.tick()
    expect(a.nodes().map((v) => v.status.node)).toEqual(['node-a'])
  })

  it("publishes a node's agent rows only while some console watches agents", async () => {
    const { clock, board, nodeBoard } = setup()
    const a = nodeBoard('node-a')
    const b = nodeBoard('node-b')
    await a.tick()
    await b.tick()
    expect(await board.agents(['node-b'])).toEqual(new Map())
    a.watchAgents()
    await expect.poll(() => board.agentsWatched()).toBe(true)
    clock.now += INTERVAL_MS
    await b.tick()
    await a.tick()
    expect(a.agentsElsewhere().get('node-b')).toEqual([agentOf('node-b')])
    expect(b.agentsElsewhere().size).toBe(0)
  })
})
