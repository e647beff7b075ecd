import { afterEach, describe, expect, it } from 'vitest'
import { ActorDownError, ask, createKernel, HandlerCrashedError, type Kernel, type TypedRef, tell } from '../../../src/actors/kernel'
import { newProbeLog, type ProbeLog, type ProbeMsg, probe, quickBackoff } from './fixtures'
import { type EventLog, recordEvents, settle, waitTurns } from './harness'
import { ManualClock } from './manual-clock'

let kernel: Kernel
let clock: ManualClock
let events: EventLog

function start(random: () => number = () => 0): void {
  clock = new ManualClock()
  kernel = createKernel({ clock, random })
  events = recordEvents(kernel)
}

afterEach(async () => {
  await kernel.shutdown()
})

/** crashes the actor once and returns the backoff delay it announced (undefined if it gave up instead) */
async function crash(ref: TypedRef<ProbeMsg>): Promise<number | undefined> {
  const crashes = events.of('crashed', ref.path).length
  tell(ref, { type: 'Boom' })
  await events.waitFor('crashed', ref.path, crashes + 1)
  return events.of('backoff', ref.path)[crashes]?.delayMs
}

async function crashAndRestart(ref: TypedRef<ProbeMsg>): Promise<number> {
  const restarts = events.of('restarted', ref.path).length
  const delayMs = await crash(ref)
  if (delayMs === undefined) throw new Error('gave up instead of backing off')
  clock.advance(delayMs)
  await events.waitFor('restarted', ref.path, restarts + 1)
  return delayMs
}

function items(ref: TypedRef<ProbeMsg>): Promise<number[]> {
  return ask<ProbeMsg, number[]>(ref, (reply) => ({ type: 'Get', reply }), 10_000)
}

function spawnProbe(path: string, log: ProbeLog, policy = quickBackoff): TypedRef<ProbeMsg> {
  return kernel.spawn(path, probe(log, { policy }))
}

describe('restarting a permanent actor', () => {
  it('drops the failing message, waits minMs, then restarts with fresh state and keeps the queue', async () => {
    start()
    const log = newProbeLog()
    const ref = spawnProbe('probe/p', log)
    tell(ref, { type: 'Push', n: 1 })
    tell(ref, { type: 'Boom' })
    tell(ref, { type: 'Push', n: 2 })
    await events.waitFor('backoff', 'probe/p')
    expect(events.of('crashed')[0]).toMatchObject({ path: 'probe/p', kind: 'probe', msgType: 'Boom' })
    expect(events.of('backoff')[0]).toEqual({
      type: 'backoff',
      path: 'probe/p',
      kind: 'probe',
      supervisor: 'root/probe',
      delayMs: 100,
      attempt: 1,
    })
    clock.advance(99)
    await settle()
    expect(events.of('restarted')).toHaveLength(0)
    expect(log.handled).toEqual([1])
    clock.advance(1)
    await events.waitFor('restarted', 'probe/p')
    expect(await items(ref)).toEqual([2])
    expect(log.inits).toBe(2)
  })

  it('treats a rejected promise from handle as a crash', async () => {
    start()
    const ref = spawnProbe('probe/r', newProbeLog())
    tell(ref, { type: 'Reject' })
    await events.waitFor('backoff', 'probe/r')
    expect(events.of('crashed')[0]).toMatchObject({ msgType: 'Reject', error: new Error('rejected') })
  })

  it('treats an init that throws on restart as one more crash and backs off again', async () => {
    start()
    let inits = 0
    const ref = kernel.spawn<number, ProbeMsg>('flaky/1', {
      kind: 'flaky',
      policy: quickBackoff,
      init: () => {
        inits++
        if (inits === 2) throw new Error('init failed')
        return inits
      },
      handle: (state, msg) => {
        if (msg.type === 'Boom') throw new Error('boom')
        if (msg.type === 'Get') msg.reply([state])
        return state
      },
    })
    tell(ref, { type: 'Boom' })
    await events.waitFor('backoff', 'flaky/1')
    clock.advance(100)
    await events.waitFor('backoff', 'flaky/1', 2)
    expect(events.of('crashed').map((e) => e.msgType)).toEqual(['Boom', undefined])
    expect(events.of('backoff').map((e) => e.attempt)).toEqual([1, 2])
    clock.advance(200)
    await events.waitFor('restarted', 'flaky/1')
    expect(await ask<ProbeMsg, number[]>(ref, (reply) => ({ type: 'Get', reply }), 1000)).toEqual([3])
  })
})

describe('backoff delay', () => {
  const policy = { maxRestarts: 100, backoff: { minMs: 100, maxMs: 1000, jitter: 0.5 } }

  it('is min(maxMs, minMs·2^(attempt−1)) when the random draw is 0', async () => {
    start(() => 0)
    const ref = spawnProbe('probe/u0', newProbeLog(), policy)
    const delays: number[] = []
    for (let i = 0; i < 6; i++) delays.push(await crashAndRestart(ref))
    expect(delays).toEqual([100, 200, 400, 800, 1000, 1000])
    expect(events.of('backoff').map((e) => e.attempt)).toEqual([1, 2, 3, 4, 5, 6])
  })

  it('is that times (1 + jitter), still capped at maxMs, when the random draw is 1', async () => {
    start(() => 1)
    const ref = spawnProbe('probe/u1', newProbeLog(), policy)
    const delays: number[] = []
    for (let i = 0; i < 6; i++) delays.push(await crashAndRestart(ref))
    expect(delays).toEqual([150, 300, 600, 1000, 1000, 1000])
  })

  it('starts again at attempt 1 only after resetAfterMs without a crash', async () => {
    start()
    const ref = spawnProbe('probe/reset', newProbeLog(), { ...quickBackoff, resetAfterMs: 5000 })
    expect(await crashAndRestart(ref)).toBe(100)
    clock.advance(4999)
    expect(await crashAndRestart(ref)).toBe(200)
    clock.advance(5000)
    expect(await crashAndRestart(ref)).toBe(100)
    expect(events.of('backoff').map((e) => e.attempt)).toEqual([1, 2, 1])
  })
})

describe('giving up', () => {
  const givesUpAfter3 = { ...quickBackoff, maxRestarts: 2, windowMs: 10_000, respawn: { minMs: 2000, maxMs: 30_000, jitter: 0 } }

  /** crashes until the actor gives up (maxRestarts 2: two restarts, then the third crash) */
  async function driveToGiveUp(ref: TypedRef<ProbeMsg>): Promise<void> {
    const gaveUps = events.of('gave-up', ref.path).length
    await crashAndRestart(ref)
    await crashAndRestart(ref)
    tell(ref, { type: 'Boom' })
    await events.waitFor('gave-up', ref.path, gaveUps + 1)
  }

  it('takes a permanent actor down after maxRestarts + 1 crashes within windowMs: nothing is queued, asks fail at once, readiness names it', async () => {
    start()
    const log = newProbeLog()
    const ref = spawnProbe('probe/g', log, givesUpAfter3)
    await crashAndRestart(ref)
    await crashAndRestart(ref)
    tell(ref, { type: 'Push', n: 2 })
    tell(ref, { type: 'Boom' })
    const waiting = items(ref).catch((e: unknown) => e)
    await events.waitFor('gave-up', 'probe/g')
    expect(events.of('gave-up')).toEqual([{ type: 'gave-up', path: 'probe/g', kind: 'probe', supervisor: 'root/probe', failures: 3 }])
    expect(await waiting).toBeInstanceOf(ActorDownError)
    expect(kernel.exists('probe/g')).toBe(true)
    expect(tell(ref, { type: 'Push', n: 3 })).toBe(false)
    await expect(items(ref)).rejects.toBeInstanceOf(ActorDownError)
    expect(kernel.unhealthy()).toEqual(['probe/g'])
    expect(kernel.degraded).toBe(true)
    // down is not stopped: afterStop is for the end of an actor, and this one comes back
    expect(events.of('stopped')).toEqual([])
    expect(log.stopped).toEqual([])
  })

  it('respawns a permanent actor that gave up after the respawn delay, with fresh state under the same ref', async () => {
    start()
    const log = newProbeLog()
    const ref = spawnProbe('probe/back', log, givesUpAfter3)
    await driveToGiveUp(ref)
    const respawn = events.of('backoff', 'probe/back').at(-1)
    expect(respawn).toEqual({ type: 'backoff', path: 'probe/back', kind: 'probe', supervisor: 'root/probe', delayMs: 2000, attempt: 1 })
    const restarts = events.of('restarted', 'probe/back').length
    clock.advance(1999)
    await settle()
    expect(events.of('restarted', 'probe/back')).toHaveLength(restarts)
    clock.advance(1)
    await events.waitFor('restarted', 'probe/back', restarts + 1)
    expect(tell(ref, { type: 'Push', n: 7 })).toBe(true)
    expect(await items(ref)).toEqual([7])
    expect(kernel.unhealthy()).toEqual([])
    expect(log.inits).toBe(4)
  })

  it('doubles the respawn delay while it keeps giving up, capped at maxMs, and starts again at the first after resetAfterMs of running', async () => {
    start()
    const ref = spawnProbe('probe/loop', newProbeLog(), { ...givesUpAfter3, resetAfterMs: 60_000 })
    const delays: number[] = []
    for (let i = 0; i < 6; i++) {
      await driveToGiveUp(ref)
      const d = events.of('backoff', 'probe/loop').at(-1)!.delayMs
      delays.push(d)
      const restarts = events.of('restarted', 'probe/loop').length
      clock.advance(d)
      await events.waitFor('restarted', 'probe/loop', restarts + 1)
    }
    expect(delays).toEqual([2000, 4000, 8000, 16_000, 30_000, 30_000])
    clock.advance(60_000)
    await driveToGiveUp(ref)
    expect(events.of('backoff', 'probe/loop').at(-1)).toMatchObject({ delayMs: 2000, attempt: 1 })
  })

  it('stops a down actor on request without respawning it', async () => {
    start()
    const log = newProbeLog()
    const ref = spawnProbe('probe/halt', log, givesUpAfter3)
    await driveToGiveUp(ref)
    await kernel.stop('probe/halt')
    clock.advance(60_000)
    await settle()
    expect(events.of('stopped', 'probe/halt')).toEqual([
      { type: 'stopped', path: 'probe/halt', kind: 'probe', supervisor: 'root/probe', reason: 'requested' },
    ])
    expect(kernel.exists('probe/halt')).toBe(false)
    expect(kernel.unhealthy()).toEqual([])
  })

  it('keeps restarting when the crashes are spread wider than windowMs', async () => {
    start()
    const ref = spawnProbe('probe/spread', newProbeLog(), { ...quickBackoff, maxRestarts: 2, windowMs: 1000 })
    for (let i = 0; i < 6; i++) {
      await crashAndRestart(ref)
      clock.advance(1000)
    }
    expect(events.of('gave-up')).toHaveLength(0)
    expect(kernel.exists('probe/spread')).toBe(true)
  })

  it('reports degraded when more than maxRestarts actors of one kind give up within windowMs, and is healthy again once they are back', async () => {
    start()
    const policy = { ...quickBackoff, maxRestarts: 1, respawn: { minMs: 2000, maxMs: 2000, jitter: 0 } }
    const a = spawnProbe('probe/a', newProbeLog(), policy)
    const b = spawnProbe('probe/b', newProbeLog(), policy)
    await crashAndRestart(a)
    tell(a, { type: 'Boom' })
    await events.waitFor('gave-up', 'probe/a')
    expect(events.of('degraded')).toHaveLength(0)
    await crashAndRestart(b)
    tell(b, { type: 'Boom' })
    await events.waitFor('gave-up', 'probe/b')
    expect(events.of('gave-up').map((e) => e.path)).toEqual(['probe/a', 'probe/b'])
    expect(events.of('degraded')).toEqual([{ type: 'degraded', supervisor: 'root/probe', reason: expect.stringContaining('probe') }])
    expect(kernel.unhealthy()).toEqual(['probe/a', 'probe/b'])
    const other = kernel.spawn('other/1', probe(newProbeLog(), { kind: 'other' }))
    tell(other, { type: 'Push', n: 5 })
    expect(await items(other)).toEqual([5])
    clock.advance(2000)
    await events.waitFor('restarted', 'probe/b', 2)
    await waitTurns(() => events.of('restarted', 'probe/a').length === 2)
    expect(kernel.unhealthy()).toEqual([])
    expect(kernel.degraded).toBe(false)
  })
})

describe('a handler that crashes', () => {
  it('fails at once the ask whose reply its message carries, instead of letting it time out', async () => {
    start()
    const ref = kernel.spawn<null, { type: 'Fail'; reply: (n: number) => void }>('probe/askfail', {
      kind: 'probe',
      policy: quickBackoff,
      init: () => null,
      handle: () => {
        throw new Error('kaput')
      },
    })
    const asked = ask<{ type: 'Fail'; reply: (n: number) => void }, number>(ref, (reply) => ({ type: 'Fail', reply }), 60_000)
    const error = await asked.catch((e: unknown) => e)
    expect(error).toBeInstanceOf(HandlerCrashedError)
    expect(error).toMatchObject({ code: 'APIARY_HANDLER_CRASHED', msgType: 'Fail', cause: new Error('kaput') })
  })

  it('fails the ask also when the reply travels on in another message the actor made', async () => {
    start()
    type M = { type: 'Start'; reply: (n: number) => void } | { type: 'Finish'; reply: (n: number) => void }
    const ref = kernel.spawn<null, M>('probe/relay', {
      kind: 'probe',
      policy: quickBackoff,
      init: () => null,
      handle: (state, msg, ctx) => {
        if (msg.type === 'Start') tell(ctx.self, { type: 'Finish', reply: msg.reply })
        else throw new Error('finish failed')
        return state
      },
    })
    await expect(ask<M, number>(ref, (reply) => ({ type: 'Start', reply }), 60_000)).rejects.toBeInstanceOf(HandlerCrashedError)
  })
})

describe('messages during backoff', () => {
  it('holds up to stashCapacity, drops the rest as overflow, and replays the held ones in order', async () => {
    start()
    const log = newProbeLog()
    const ref = spawnProbe('probe/stash', log, { ...quickBackoff, stashCapacity: 2 })
    tell(ref, { type: 'Boom' })
    tell(ref, { type: 'Push', n: 1 })
    tell(ref, { type: 'Push', n: 2 })
    await events.waitFor('backoff', 'probe/stash')
    expect(tell(ref, { type: 'Push', n: 3 })).toBe(true)
    expect(tell(ref, { type: 'Push', n: 4 })).toBe(true)
    expect(tell(ref, { type: 'Push', n: 5 })).toBe(false)
    expect(kernel.stats('probe/stash')).toEqual({ queued: 4, dropped: 1 })
    expect(events.of('overflow')).toEqual([{ type: 'overflow', path: 'probe/stash', kind: 'probe', supervisor: 'root/probe', dropped: 1 }])
    clock.advance(100)
    await waitTurns(() => log.handled.length === 4)
    expect(log.handled).toEqual([1, 2, 3, 4])
    expect(await items(ref)).toEqual([1, 2, 3, 4])
  })

  it('stops without restarting when stopped during backoff, and afterStop sees the last good state', async () => {
    start()
    const log = newProbeLog()
    const ref = spawnProbe('probe/sb', log)
    tell(ref, { type: 'Push', n: 1 })
    tell(ref, { type: 'Boom' })
    await events.waitFor('backoff', 'probe/sb')
    await kernel.stop('probe/sb')
    clock.advance(10_000)
    await settle()
    expect(events.of('restarted')).toHaveLength(0)
    expect(events.of('stopped')).toEqual([
      { type: 'stopped', path: 'probe/sb', kind: 'probe', supervisor: 'root/probe', reason: 'requested' },
    ])
    expect(log.stopped).toEqual([{ items: [1] }])
  })
})

describe('temporary actors', () => {
  it('are stopped on their first crash, never restarted', async () => {
    start()
    const log = newProbeLog()
    const ref = kernel.spawn('connection/1', probe(log, { kind: 'connection', policy: { mode: 'temporary' } }))
    tell(ref, { type: 'Push', n: 1 })
    tell(ref, { type: 'Boom' })
    await events.waitFor('stopped', 'connection/1')
    expect(events.events.map((e) => e.type)).toEqual(['started', 'crashed', 'stopped'])
    expect(events.of('stopped')[0]?.reason).toBe('gave-up')
    expect(log.stopped).toEqual([{ items: [1] }])
    expect(log.inits).toBe(1)
    expect(tell(ref, { type: 'Push', n: 2 })).toBe(false)
  })
})

describe('respawning an actor whose init keeps failing', () => {
  it('keeps it down and backs off further each time, up to maxMs, until an init succeeds', async () => {
    start()
    let failInit = false
    let inits = 0
    const ref = kernel.spawn<null, ProbeMsg>('flaky/respawn', {
      kind: 'flaky',
      policy: { ...quickBackoff, maxRestarts: 0, respawn: { minMs: 1000, maxMs: 8000, jitter: 0 } },
      init: () => {
        inits++
        if (failInit) throw new Error('no database')
        return null
      },
      handle: (state, msg) => {
        if (msg.type === 'Boom') throw new Error('boom')
        return state
      },
    })
    failInit = true
    tell(ref, { type: 'Boom' })
    await events.waitFor('gave-up', 'flaky/respawn')
    const delays: number[] = []
    for (let i = 0; i < 5; i++) {
      const d = events.of('backoff', 'flaky/respawn').at(-1)!.delayMs
      delays.push(d)
      const crashes = events.of('crashed', 'flaky/respawn').length
      clock.advance(d)
      await events.waitFor('crashed', 'flaky/respawn', crashes + 1)
    }
    expect(delays).toEqual([1000, 2000, 4000, 8000, 8000])
    expect(kernel.unhealthy()).toEqual(['flaky/respawn'])
    failInit = false
    clock.advance(8000)
    await events.waitFor('restarted', 'flaky/respawn')
    expect(kernel.unhealthy()).toEqual([])
    expect(inits).toBe(7)
  })
})
