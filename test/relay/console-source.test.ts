import { Subject } from 'rxjs'
import { describe, expect, it } from 'vitest'
import type { SupervisionEvent } from '../../src/actors/kernel'
import { ClusterBoard } from '../../src/infra/console/cluster-board'
import { HotConnections } from '../../src/infra/console/hot-connections'
import { createMemoryStatusBoard } from '../../src/infra/console/status-board'
import type { ManagementOps } from '../../src/infra/http/nip86/methods'
import { Tenants } from '../../src/infra/http/tenants'
import { createLogger } from '../../src/infra/log'
import { DEFAULT_SETTINGS } from '../../src/infra/store/community-store'
import { TrafficMeter } from '../../src/infra/ws/traffic-meter'
import type { AgentConnectionsView, AgentRow, NodeStatus } from '../../src/protocols/console'
import { createConsoleSource } from '../../src/relay/console-source'
import { keepSupervision, SUPERVISION_ROWS } from '../../src/relay/supervision-ring'

const OPERATOR = 'ee'.repeat(32)
const ADMIN = 'aa'.repeat(32)
const STRANGER = 'bb'.repeat(32)

const record = (id: string, admins: string[] = []) => ({
  id,
  name: id,
  hosts: [`${id}.test`],
  agents: [],
  admins,
  settings: DEFAULT_SETTINGS,
  kinds: { allowed: [], disallowed: [] },
})

const agentsIn = (n: number, capability: string): AgentConnectionsView => ({
  rows: () =>
    Array.from({ length: n }, (_, i) => ({
      conn: String(i),
      pubkey: i.toString(16).padStart(64, '0'),
      state: i % 2 === 0 ? 'ACTIVE' : 'SUSPECT',
      capabilities: [capability],
      heartbeatAgeMs: 0,
      leaseRemainingMs: 1000,
      connectedSinceMs: 0,
      flagged: false,
    })) as Omit<AgentRow, 'node' | 'community'>[],
  counts: () => ({ ACTIVE: 0, SUSPECT: 0, ZOMBIE: 0, CLOSED: 0 }),
  stateOf: () => undefined,
})

function setup() {
  const clock = { now: 1_700_000_000_000 }
  const tenants = new Tenants([record('c1', [ADMIN]), record('c2')])
  const hot = new HotConnections({ node: 'here' })
  const board = new ClusterBoard({
    board: createMemoryStatusBoard(() => clock.now),
    node: 'here',
    intervalMs: 2000,
    nowMs: () => clock.now,
    collect: async () => ({ node: 'here', publishedAtMs: clock.now }) as NodeStatus,
    agentRows: () => [],
    log: { warn: () => {} },
  })
  const source = createConsoleSource({
    node: 'here',
    board,
    hot,
    tenants,
    operators: new Set([OPERATOR]),
    agentConnectionsOf: (c) => (c === 'c1' ? agentsIn(30, 'summarize') : c === 'c2' ? agentsIn(10, 'translate') : undefined),
    ops: {} as ManagementOps,
    log: createLogger('silent'),
    nowMs: () => clock.now,
  })
  return { source, hot }
}

describe('the console source of a node', () => {
  it('filters agents by community, state and capability, and pages them', () => {
    const { source } = setup()
    expect(source.agents({ communities: 'all', offset: 0, limit: 100 }).total).toBe(40)
    const c1 = source.agents({ communities: new Set(['c1']), state: 'SUSPECT', offset: 10, limit: 10 })
    expect(c1.total).toBe(15)
    expect(c1.rows).toHaveLength(5)
    expect(c1.rows.every((r) => r.community === 'c1' && r.state === 'SUSPECT' && r.node === 'here')).toBe(true)
    expect(source.agents({ communities: 'all', capability: 'translate', offset: 0, limit: 100 }).total).toBe(10)
  })

  it("shows an admin's hot connections of their communities only", () => {
    const { source, hot } = setup()
    const conn = (id: string, community: string) => ({
      id,
      community,
      ip: '10.0.0.1',
      meter: new TrafficMeter(0),
      authed: new Set<string>(),
      subs: new Set<string>(),
    })
    const a = conn('1', 'c1')
    const b = conn('2', 'c2')
    a.meter.frameIn(10)
    b.meter.frameIn(10)
    b.meter.frameIn(10)
    hot.sample([a, b], 1000)
    expect(source.hot('inFramesPerSecond', 'all').map((r) => r.conn)).toEqual(['2', '1'])
    expect(source.hot('inFramesPerSecond', new Set(['c1'])).map((r) => r.conn)).toEqual(['1'])
  })

  it("knows the operators and each community's admins", () => {
    const { source } = setup()
    expect(source.isOperator(OPERATOR)).toBe(true)
    expect(source.isOperator(ADMIN)).toBe(false)
    expect(source.adminsOf('c1')).toEqual([ADMIN])
    expect(source.adminsOf('nope')).toEqual([])
    expect(source.communityIds().sort()).toEqual(['c1', 'c2'])
  })

  it('calls NIP-86 methods for operators and admins, and refuses everyone else with "restricted:"', async () => {
    const { source } = setup()
    const call = { method: 'supportedmethods', params: [] }
    expect((await source.manage('c1', ADMIN, call)).result).toContain('banpubkey')
    expect((await source.manage('c2', OPERATOR, call)).result).toContain('banpubkey')
    expect((await source.manage('c2', ADMIN, call)).error).toMatch(/^restricted:/)
    expect((await source.manage('c1', STRANGER, call)).error).toMatch(/^restricted:/)
    expect((await source.manage('nope', OPERATOR, call)).error).toMatch(/^invalid:/)
  })
})

describe('the supervision ring', () => {
  it('keeps the last 100 events, numbered, without starts and ordinary stops', () => {
    const events$ = new Subject<SupervisionEvent>()
    const ring = keepSupervision(events$, 'here', () => 5)
    events$.next({ type: 'started', path: 'community/c1', kind: 'community', supervisor: 'root/community' })
    events$.next({ type: 'stopped', path: 'connection/1', kind: 'connection', supervisor: 'root/connection', reason: 'requested' })
    for (let i = 0; i < 150; i++)
      events$.next({
        type: 'crashed',
        path: 'community/c1',
        kind: 'community',
        supervisor: 'root/community',
        error: new Error(`boom ${i}`),
        msgType: 'Publish',
      })
    const rows = ring.rows()
    expect(rows).toHaveLength(SUPERVISION_ROWS)
    expect(rows[0]).toMatchObject({
      node: 'here',
      seq: 51,
      atMs: 5,
      type: 'crashed',
      path: 'community/c1',
      detail: 'Error: boom 50 (on Publish)',
    })
    expect(rows.at(-1)?.seq).toBe(150)
    ring.stop()
  })
})
