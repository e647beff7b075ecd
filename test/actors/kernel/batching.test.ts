import { afterEach, describe, expect, it } from 'vitest'
import { ActorStoppedError, ask, createKernel, type Kernel, type SupervisionPolicy, type TypedRef, tell } from '../../../src/actors/kernel'
import { DRAIN_BATCH, drainTurns } from '../../../src/actors/kernel/drain'
import { newProbeLog, type ProbeLog, type ProbeMsg, probe, quickBackoff } from './fixtures'
import { type EventLog, recordEvents, settle, waitTurns } from './harness'
import { ManualClock } from './manual-clock'

let kernel: Kernel
let clock: ManualClock
let events: EventLog

function start(): void {
  clock = new ManualClock()
  kernel = createKernel({ clock, random: () => 0 })
  events = recordEvents(kernel)
}

afterEach(async () => {
  await kernel.shutdown()
})

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)

/** tells Push 1..total, except a Boom in place of number `boomAt` */
function tellAll(ref: TypedRef<ProbeMsg>, total: number, boomAt?: number): void {
  for (const n of range(1, total)) {
    expect(tell(ref, n === boomAt ? { type: 'Boom' } : { type: 'Push', n })).toBe(true)
  }
}

function spawnProbe(path: string, log: ProbeLog, policy: Partial<SupervisionPolicy> = quickBackoff) {
  return kernel.spawn(path, probe(log, { policy }))
}

describe('batched draining', () => {
  it('handles 1,000 messages told at once in order, in far fewer nact turns than messages', async () => {
    start()
    const log = newProbeLog()
    const ref = spawnProbe('batch/1', log)
    tellAll(ref, 1000)
    await waitTurns(() => log.handled.length === 1000)
    expect(log.handled).toEqual(range(1, 1000))
    expect(drainTurns(ref)).toBeLessThanOrEqual(Math.ceil(1000 / DRAIN_BATCH) + 1)
  })

  it('runs a message told during a drain in that same drain (it joins the queue behind the others)', async () => {
    start()
    const seen: number[] = []
    type Msg = { type: 'Next'; n: number }
    const ref = kernel.spawn<null, Msg>('chain/1', {
      kind: 'chain',
      init: () => null,
      handle: (state, msg, ctx) => {
        seen.push(msg.n)
        if (msg.n < 100) tell(ctx.self, { type: 'Next', n: msg.n + 1 })
        return state
      },
    })
    tell(ref, { type: 'Next', n: 1 })
    await waitTurns(() => seen.length === 100)
    expect(seen).toEqual(range(1, 100))
    expect(drainTurns(ref)).toBe(1)
  })

  it('lets two busy actors take turns: neither runs more than one batch while the other waits', async () => {
    start()
    const order: string[] = []
    const seen: Record<string, number[]> = { a: [], b: [] }
    type Msg = { type: 'N'; n: number }
    const spawnBusy = (name: string) =>
      kernel.spawn<null, Msg>(`busy/${name}`, {
        kind: 'busy',
        init: () => null,
        handle: (state, msg) => {
          order.push(name)
          seen[name]!.push(msg.n)
          return state
        },
      })
    const refs = [spawnBusy('a'), spawnBusy('b')]
    for (const ref of refs) for (const n of range(1, 10_000)) expect(tell(ref, { type: 'N', n })).toBe(true)
    await waitTurns(() => order.length === 20_000)
    expect(seen.a).toEqual(range(1, 10_000))
    expect(seen.b).toEqual(range(1, 10_000))
    expect(order.indexOf('b')).toBeLessThan(order.lastIndexOf('a'))
    expect(order.indexOf('a')).toBeLessThan(order.lastIndexOf('b'))
    let longestRun = 0
    for (let i = 0, run = 0; i < order.length; i++) {
      run = i > 0 && order[i] === order[i - 1] ? run + 1 : 1
      longestRun = Math.max(longestRun, run)
    }
    expect(longestRun).toBeLessThanOrEqual(DRAIN_BATCH)
  })
})

describe('a crash in the middle of a batch', () => {
  it('permanent: drops the failing message, then runs the rest once each, in order, then the stash', async () => {
    start()
    const log = newProbeLog()
    const ref = spawnProbe('crash/p', log)
    tellAll(ref, 1000, 500)
    await events.waitFor('backoff', 'crash/p')
    expect(events.of('crashed')).toEqual([expect.objectContaining({ path: 'crash/p', msgType: 'Boom' })])
    expect(log.handled).toEqual(range(1, 499))
    expect(tell(ref, { type: 'Push', n: 1001 })).toBe(true)
    expect(kernel.stats('crash/p')?.queued).toBe(501)
    await settle()
    expect(log.handled).toHaveLength(499)
    clock.advance(100)
    await waitTurns(() => log.handled.length === 1000)
    const expected = [...range(1, 499), ...range(501, 1001)]
    expect(log.handled).toEqual(expected)
    const items = await ask<ProbeMsg, number[]>(ref, (reply) => ({ type: 'Get', reply }), 1000)
    expect(items).toEqual(range(501, 1001))
    expect(events.of('crashed')).toHaveLength(1)
    await settle()
    expect(kernel.stats('crash/p')).toEqual({ queued: 0, dropped: 0 })
  })

  it('temporary: stops; messages behind the failing one never run and asks behind it fail', async () => {
    start()
    const log = newProbeLog()
    const ref = kernel.spawn('crash/t', probe(log, { kind: 'connection', policy: { mode: 'temporary' } }))
    tellAll(ref, 1000, 500)
    const asks = range(1, 10).map(() => ask<ProbeMsg, number[]>(ref, (reply) => ({ type: 'Get', reply }), 60_000))
    const outcomes = await Promise.allSettled(asks)
    await events.waitFor('stopped', 'crash/t')
    expect(outcomes.every((o) => o.status === 'rejected' && o.reason instanceof ActorStoppedError)).toBe(true)
    expect(events.of('crashed')).toEqual([expect.objectContaining({ path: 'crash/t', msgType: 'Boom' })])
    expect(events.of('stopped', 'crash/t')[0]?.reason).toBe('gave-up')
    await settle()
    expect(log.handled).toEqual(range(1, 499))
    expect(log.stopped).toEqual([{ items: range(1, 499) }])
  })
})

describe('stopping during a long batch', () => {
  it('stops after the message in progress when that message stops its own actor', async () => {
    start()
    const seen: number[] = []
    const stoppedWith: number[] = []
    type Msg = { type: 'N'; n: number }
    const ref = kernel.spawn<number, Msg>('self-stop/1', {
      kind: 'self-stop',
      init: () => 0,
      handle: (_state, msg, ctx) => {
        seen.push(msg.n)
        if (msg.n === 300) void ctx.kernel.stop(ctx.path)
        return msg.n
      },
      afterStop: (state) => {
        stoppedWith.push(state)
      },
    })
    for (const n of range(1, 1000)) tell(ref, { type: 'N', n })
    await events.waitFor('stopped', 'self-stop/1')
    await settle()
    expect(seen).toEqual(range(1, 300))
    expect(stoppedWith).toEqual([300])
  })

  it('waits for the message in progress, not the rest of the batch, when stopped from outside', async () => {
    start()
    const log = newProbeLog()
    const ref = spawnProbe('stop/long', log)
    let release!: () => void
    const until = new Promise<void>((resolve) => {
      release = resolve
    })
    tellAll(ref, 10)
    tell(ref, { type: 'Hold', until })
    for (const n of range(11, 1000)) tell(ref, { type: 'Push', n })
    await waitTurns(() => log.handled.length === 10)
    expect(kernel.stats('stop/long')?.queued).toBe(991)
    const stopping = kernel.stop('stop/long')
    release()
    await stopping
    await settle()
    expect(log.handled).toEqual(range(1, 10))
    expect(log.stopped).toEqual([{ items: range(1, 10) }])
  })
})
