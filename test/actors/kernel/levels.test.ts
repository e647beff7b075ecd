import { afterEach, describe, expect, it } from 'vitest'
import { ask, createKernel, type Kernel, type KernelOptions, type TypedRef, tell } from '../../../src/actors/kernel'
import { newProbeLog, type ProbeMsg, probe, quickBackoff } from './fixtures'
import { type EventLog, recordEvents, settle } from './harness'
import { ManualClock } from './manual-clock'

let kernel: Kernel
let clock: ManualClock
let events: EventLog

function start(opts: KernelOptions = {}): void {
  clock = new ManualClock()
  kernel = createKernel({ clock, random: () => 0, ...opts })
  events = recordEvents(kernel)
}

afterEach(async () => {
  await kernel.shutdown()
})

// gives up on its first crash; its kind supervisor escalates on its first give-up
const givesUpAtOnce = { ...quickBackoff, maxRestarts: 0, windowMs: 60_000, respawn: { minMs: 2000, maxMs: 2000, jitter: 0 } }

function spawnAt(path: string, kind: string, level: 'root' | 'node', policy = givesUpAtOnce): TypedRef<ProbeMsg> {
  return kernel.spawn(path, { ...probe(newProbeLog(), { kind, policy }), supervisor: level })
}

async function giveUp(ref: TypedRef<ProbeMsg>): Promise<void> {
  const before = events.of('gave-up', ref.path).length
  tell(ref, { type: 'Boom' })
  await events.waitFor('gave-up', ref.path, before + 1)
}

describe('the supervision tree', () => {
  it('names on every event the supervisor it happened under: root/<kind>, or root/node/<kind> for the node level', async () => {
    start()
    const tenant = spawnAt('community/a', 'community', 'root')
    const part = spawnAt('node/verifier', 'verifier', 'node')
    await giveUp(tenant)
    await giveUp(part)
    const seen = (path: string) => new Set(events.events.filter((e) => 'path' in e && e.path === path).map((e) => e.supervisor))
    expect(seen('community/a')).toEqual(new Set(['root/community']))
    expect(seen('node/verifier')).toEqual(new Set(['root/node/verifier']))
    expect(events.of('started').map((e) => [e.path, e.supervisor])).toEqual([
      ['community/a', 'root/community'],
      ['node/verifier', 'root/node/verifier'],
    ])
  })

  it('counts a give-up under node in that level and never in a tenant kind: the community escalates only on its own give-ups', async () => {
    start()
    const community = spawnAt('community/a', 'community', 'root', { ...givesUpAtOnce, maxRestarts: 1 })
    const bridge = spawnAt('bridges/bus', 'bus-bridge', 'node')
    await giveUp(bridge)
    // its kind escalated to node, which absorbs one escalation: nothing reaches root
    expect(events.of('escalated')).toEqual([{ type: 'escalated', supervisor: 'root/node/bus-bridge', failures: 1, windowMs: 60_000 }])
    expect(events.of('degraded')).toEqual([])
    // one give-up of its own is within the community kind's intensity (1): the bridge's did not count there
    await crashAndRestart(community)
    tell(community, { type: 'Boom' })
    await events.waitFor('gave-up', 'community/a')
    expect(events.of('escalated').map((e) => e.supervisor)).toEqual(['root/node/bus-bridge'])
    clock.advance(2000)
    await events.waitFor('restarted', 'community/a', 2)
    await crashAndRestart(community)
    tell(community, { type: 'Boom' })
    await events.waitFor('gave-up', 'community/a', 2)
    expect(events.of('escalated').map((e) => e.supervisor)).toEqual(['root/node/bus-bridge', 'root/community'])
    expect(events.of('degraded')).toEqual([
      { type: 'degraded', supervisor: 'root/community', reason: expect.stringContaining('root/community') },
    ])
  })

  it('escalates node to root past its intensity: root reports degraded with the level path and keeps running', async () => {
    start({ node: { maxGiveUps: 1, windowMs: 10_000 } })
    const verifier = spawnAt('node/verifier', 'verifier', 'node')
    const writer = spawnAt('node/store-writer', 'store-writer', 'node')
    await giveUp(verifier)
    expect(events.of('degraded')).toEqual([])
    await giveUp(writer)
    expect(events.of('escalated').map((e) => e.supervisor)).toEqual(['root/node/verifier', 'root/node/store-writer', 'root/node'])
    expect(events.of('escalated').at(-1)).toEqual({ type: 'escalated', supervisor: 'root/node', failures: 2, windowMs: 10_000 })
    expect(events.of('degraded')).toEqual([{ type: 'degraded', supervisor: 'root/node', reason: expect.stringContaining('root/node') }])
    // the process and every other actor go on; the parts come back by themselves
    const other = kernel.spawn('community/b', probe(newProbeLog(), { kind: 'community' }))
    tell(other, { type: 'Push', n: 1 })
    expect(await ask<ProbeMsg, number[]>(other, (reply) => ({ type: 'Get', reply }), 1000)).toEqual([1])
    clock.advance(2000)
    await events.waitFor('restarted', 'node/store-writer')
    await events.waitFor('restarted', 'node/verifier')
    expect(kernel.unhealthy()).toEqual([])
  })

  it('forgets escalations older than the level window', async () => {
    start({ node: { maxGiveUps: 1, windowMs: 10_000 } })
    await giveUp(spawnAt('node/verifier', 'verifier', 'node'))
    clock.advance(10_000)
    await giveUp(spawnAt('node/store-writer', 'store-writer', 'node'))
    expect(events.of('escalated').map((e) => e.supervisor)).toEqual(['root/node/verifier', 'root/node/store-writer'])
    expect(events.of('degraded')).toEqual([])
  })

  it('refuses an actor whose kind is already supervised under the other level', () => {
    start()
    spawnAt('bridges/bus', 'bus-bridge', 'node')
    expect(() => spawnAt('bridges/other', 'bus-bridge', 'root')).toThrow(TypeError)
  })
})

describe('ending a backoff early', () => {
  it('restarts at once, without waiting out the delay, when a message that ends the backoff arrives', async () => {
    start()
    const log = newProbeLog()
    const ref = kernel.spawn('probe/early', {
      ...probe(log, { policy: { backoff: { minMs: 30_000, maxMs: 30_000, jitter: 0 } } }),
      endsBackoff: (msg: ProbeMsg) => msg.type === 'Push' && msg.n === 99,
    })
    tell(ref, { type: 'Boom' })
    await events.waitFor('backoff', 'probe/early')
    tell(ref, { type: 'Push', n: 1 })
    await settle()
    expect(events.of('restarted')).toHaveLength(0)
    tell(ref, { type: 'Push', n: 99 })
    await events.waitFor('restarted', 'probe/early')
    expect(await ask<ProbeMsg, number[]>(ref, (reply) => ({ type: 'Get', reply }), 1000)).toEqual([1, 99])
    expect(log.inits).toBe(2)
    // the cancelled wait does not restart it a second time
    clock.advance(30_000)
    await settle()
    expect(events.of('restarted')).toHaveLength(1)
  })
})

describe('readiness while restarting', () => {
  it('leaves out an actor whose resource serves a fallback meanwhile, and names one that does not', async () => {
    start()
    const slow = { backoff: { minMs: 5000, maxMs: 5000, jitter: 0 } }
    const fallback = kernel.spawn('node/store-writer', {
      ...probe(newProbeLog(), { kind: 'store-writer', policy: slow }),
      unreadyWhileRestarting: false,
    })
    const plain = kernel.spawn('node/verifier', probe(newProbeLog(), { kind: 'verifier', policy: slow }))
    tell(fallback, { type: 'Boom' })
    tell(plain, { type: 'Boom' })
    await events.waitFor('backoff', 'node/store-writer')
    await events.waitFor('backoff', 'node/verifier')
    expect(kernel.unhealthy()).toEqual(['node/verifier'])
  })
})

async function crashAndRestart(ref: TypedRef<ProbeMsg>): Promise<void> {
  const restarts = events.of('restarted', ref.path).length
  const crashes = events.of('crashed', ref.path).length
  tell(ref, { type: 'Boom' })
  await events.waitFor('crashed', ref.path, crashes + 1)
  const delayMs = events.of('backoff', ref.path).at(-1)?.delayMs ?? 0
  clock.advance(delayMs)
  await events.waitFor('restarted', ref.path, restarts + 1)
}
