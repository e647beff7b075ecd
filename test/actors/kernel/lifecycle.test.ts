import { afterEach, describe, expect, it, vi } from 'vitest'
import {
  ActorExistsError,
  ask,
  createKernel,
  type Kernel,
  KernelShutdownError,
  type SupervisionEvent,
  tell,
} from '../../../src/actors/kernel'
import { newProbeLog, type ProbeMsg, probe } from './fixtures'
import { type EventLog, recordEvents, settle, waitTurns } from './harness'
import { ManualClock } from './manual-clock'

let kernel: Kernel
let clock: ManualClock
let events: EventLog

function start(random?: () => number, stopGraceMs?: number): void {
  clock = new ManualClock()
  kernel = createKernel({ clock, random, stopGraceMs })
  events = recordEvents(kernel)
}

afterEach(async () => {
  vi.restoreAllMocks()
  await kernel.shutdown()
})

function items(path: string): Promise<number[]> {
  const ref = kernel.lookup<ProbeMsg>(path)
  if (ref === undefined) throw new Error(`no actor at ${path}`)
  return ask<ProbeMsg, number[]>(ref, (reply) => ({ type: 'Get', reply }), 10_000)
}

describe('stopping by prefix', () => {
  it('stops every actor under the prefix, awaiting each afterStop, and leaves the others running', async () => {
    start()
    const stoppedPaths: string[] = []
    for (let i = 0; i < 50; i++) {
      kernel.spawn<null, ProbeMsg>(`connection/${i}`, {
        kind: 'connection',
        init: () => null,
        handle: (s) => s,
        afterStop: async (_state, ctx) => {
          await new Promise<void>((resolve) => setImmediate(resolve))
          stoppedPaths.push(ctx.path)
        },
      })
    }
    kernel.spawn('community/default', probe(newProbeLog(), { kind: 'community' }))
    await kernel.stopPrefix('connection/')
    expect(stoppedPaths).toHaveLength(50)
    expect(events.of('stopped').every((e) => e.reason === 'requested' && e.kind === 'connection')).toBe(true)
    expect(kernel.exists('connection/7')).toBe(false)
    expect(kernel.exists('community/default')).toBe(true)
    expect(await items('community/default')).toEqual([])
  })
})

describe('stopping one actor', () => {
  it('lets the message in progress finish, then runs afterStop with the resulting state, then resolves', async () => {
    start()
    const log = newProbeLog()
    const ref = kernel.spawn('probe/s', probe(log))
    let release!: () => void
    const until = new Promise<void>((resolve) => {
      release = resolve
    })
    tell(ref, { type: 'Push', n: 1 })
    tell(ref, { type: 'Hold', until })
    tell(ref, { type: 'Push', n: 2 })
    await waitTurns(() => log.handled.length === 1)
    await settle()
    let resolved = false
    const stopping = kernel.stop('probe/s').then(() => {
      resolved = true
    })
    expect(kernel.exists('probe/s')).toBe(false)
    expect(tell(ref, { type: 'Push', n: 3 })).toBe(false)
    await settle()
    expect(resolved).toBe(false)
    release()
    await stopping
    expect(log.stopped).toEqual([{ items: [1] }])
    expect(log.handled).toEqual([1])
  })

  it('runs afterStop anyway once a hung message has had stopGraceMs to finish', async () => {
    start(undefined, 5000)
    const log = newProbeLog()
    const ref = kernel.spawn('probe/hung', probe(log))
    tell(ref, { type: 'Push', n: 1 })
    tell(ref, { type: 'Hold', until: new Promise<void>(() => {}) })
    await waitTurns(() => log.handled.length === 1)
    await settle()
    const stopping = kernel.stop('probe/hung')
    clock.advance(4999)
    await settle()
    expect(log.stopped).toHaveLength(0)
    clock.advance(1)
    await stopping
    expect(log.stopped).toEqual([{ items: [1] }])
  })

  it('keeps the process alive and reports crashed when afterStop throws or rejects', async () => {
    start()
    const throwing = ['sync', 'async'] as const
    for (const how of throwing) {
      kernel.spawn<null, ProbeMsg>(`bad-stop/${how}`, {
        kind: 'bad-stop',
        init: () => null,
        handle: (s) => s,
        afterStop:
          how === 'sync'
            ? () => {
                throw new Error('sync afterStop')
              }
            : () => Promise.reject(new Error('async afterStop')),
      })
    }
    await kernel.stopPrefix('bad-stop/')
    expect(events.of('crashed').map((e) => (e.error as Error).message)).toEqual(['sync afterStop', 'async afterStop'])
    expect(events.of('stopped')).toHaveLength(2)
  })
})

describe('idle stop', () => {
  it('stops an actor after idleStopMs without messages, with reason idle; each message postpones it', async () => {
    start()
    const log = newProbeLog()
    const ref = kernel.spawn('principal/default/ab', probe(log, { kind: 'principal', idleStopMs: 1000 }))
    clock.advance(500)
    tell(ref, { type: 'Push', n: 1 })
    await waitTurns(() => log.handled.length === 1)
    clock.advance(999)
    await settle()
    expect(kernel.exists('principal/default/ab')).toBe(true)
    clock.advance(1)
    await events.waitFor('stopped')
    expect(events.of('stopped')[0]?.reason).toBe('idle')
    expect(log.stopped).toEqual([{ items: [1] }])
  })
})

describe('paths', () => {
  it('accepts characters nact’s names reject, and never confuses an escaped path with a raw one', async () => {
    start()
    const paths = ['principal/default/ab:cd', 'community/🐝 蜂', 'x/y', 'x$002fy', 'odd/%20?#&=~[]{}|\\^`"<>', '$']
    for (const [n, path] of paths.entries()) {
      tell(kernel.spawn(path, probe(newProbeLog())), { type: 'Push', n })
    }
    for (const [n, path] of paths.entries()) expect(await items(path)).toEqual([n])
  })

  it('refuses to spawn a second actor at a live path but activates again once it stopped', async () => {
    start()
    const first = kernel.spawn('probe/once', probe(newProbeLog()))
    expect(() => kernel.spawn('probe/once', probe(newProbeLog()))).toThrow(ActorExistsError)
    expect(kernel.getOrSpawn('probe/once', probe(newProbeLog()))).toBe(first)
    expect(() => kernel.getOrSpawn('probe/once', probe(newProbeLog(), { kind: 'other' }))).toThrow(TypeError)
    await kernel.stop('probe/once')
    const second = kernel.getOrSpawn('probe/once', probe(newProbeLog()))
    expect(second).not.toBe(first)
    expect(tell(first, { type: 'Push', n: 1 })).toBe(false)
    expect(tell(second, { type: 'Push', n: 1 })).toBe(true)
  })

  it('leaves the path free when init throws', () => {
    start()
    const def = { ...probe(newProbeLog()), init: () => ({ items: [] }) }
    expect(() =>
      kernel.spawn('probe/init', {
        ...def,
        init: () => {
          throw new Error('no')
        },
      }),
    ).toThrow('no')
    expect(kernel.exists('probe/init')).toBe(false)
    expect(() => kernel.spawn('probe/init', def)).not.toThrow()
  })
})

describe('faults that must not end the process', () => {
  it('keeps delivering events to other subscribers when one supervision$ subscriber throws', async () => {
    start()
    const reported = vi.spyOn(console, 'error').mockImplementation(() => {})
    kernel.supervision$.subscribe(() => {
      throw new Error('bad subscriber')
    })
    const after: SupervisionEvent[] = []
    kernel.supervision$.subscribe((e) => after.push(e))
    kernel.spawn('probe/sub', probe(newProbeLog()))
    await kernel.stop('probe/sub')
    expect(after.map((e) => e.type)).toEqual(['started', 'stopped'])
    // RxJS reports a subscriber's error from a timer
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(reported).toHaveBeenCalled()
  })

  it('stops the actor and marks the kernel degraded when the crash policy itself throws', async () => {
    start(() => {
      throw new Error('no entropy')
    })
    const log = newProbeLog()
    const ref = kernel.spawn('probe/policy', probe(log))
    tell(ref, { type: 'Boom' })
    await events.waitFor('stopped', 'probe/policy')
    expect(events.of('degraded')[0]?.reason).toContain('no entropy')
    expect(events.of('stopped')[0]?.reason).toBe('gave-up')
    expect(log.stopped).toHaveLength(1)
    expect(kernel.degraded).toBe(true)
    tell(kernel.spawn('probe/fine', probe(newProbeLog())), { type: 'Push', n: 1 })
    expect(await items('probe/fine')).toEqual([1])
  })
})

describe('shutdown', () => {
  it('runs afterStop of every actor, including one waiting to restart, then completes supervision$', async () => {
    start()
    const log = newProbeLog()
    for (let i = 0; i < 5; i++) kernel.spawn(`probe/${i}`, probe(log))
    tell(kernel.lookup<ProbeMsg>('probe/0')!, { type: 'Boom' })
    await events.waitFor('backoff')
    let completed = false
    kernel.supervision$.subscribe({ complete: () => (completed = true) })
    await kernel.shutdown()
    expect(log.stopped).toHaveLength(5)
    expect(events.of('stopped').every((e) => e.reason === 'shutdown')).toBe(true)
    expect(completed).toBe(true)
    // no timer outlives the kernel (idle, backoff, ask, overflow), so nothing holds the process open
    expect(clock.pendingTimers()).toBe(0)
    expect(() => kernel.spawn('probe/late', probe(log))).toThrow(KernelShutdownError)
  })

  it('publishes what bridges report, such as lagged', () => {
    start()
    kernel.report({ type: 'lagged', path: 'bridge/redis', kind: 'bridge', skipped: 12 })
    expect(events.of('lagged')).toEqual([{ type: 'lagged', path: 'bridge/redis', kind: 'bridge', supervisor: 'root/bridge', skipped: 12 }])
    expect(kernel.stats('bridge/redis')).toBeUndefined()
  })
})
