import { afterEach, describe, expect, it } from 'vitest'
import {
  ActorStoppedError,
  AskTimeoutError,
  ask,
  createKernel,
  type Kernel,
  MailboxFullError,
  type TypedRef,
  tell,
  tellUntilTaken,
} from '../../../src/actors/kernel'
import { PendingAsks } from '../../../src/actors/kernel/messaging'
import { newProbeLog, type ProbeMsg, probe, quickBackoff } from './fixtures'
import { recordEvents, settle, waitTurns } from './harness'
import { ManualClock } from './manual-clock'

let kernel: Kernel
let clock: ManualClock

function start(opts: { overflowReportMs?: number } = {}): Kernel {
  clock = new ManualClock()
  kernel = createKernel({ clock, ...opts })
  return kernel
}

afterEach(async () => {
  await kernel.shutdown()
})

describe('message order', () => {
  it('handles one actor’s messages one at a time, in the order they were told', async () => {
    start()
    let running = 0
    let maxRunning = 0
    const seen: number[] = []
    const ref = kernel.spawn<null, { type: 'N'; n: number }>('order/1', {
      kind: 'order',
      init: () => null,
      handle: async (state, msg) => {
        running++
        maxRunning = Math.max(maxRunning, running)
        if (msg.n % 3 === 0) await new Promise<void>((resolve) => setImmediate(resolve))
        seen.push(msg.n)
        running--
        return state
      },
    })
    const sent = Array.from({ length: 1000 }, (_, n) => n)
    for (const n of sent) expect(tell(ref, { type: 'N', n })).toBe(true)
    await waitTurns(() => seen.length === sent.length)
    expect(seen).toEqual(sent)
    expect(maxRunning).toBe(1)
  })
})

describe('ask', () => {
  it('resolves with the value the actor passes to the reply callback', async () => {
    start()
    const ref = kernel.spawn('probe/ask', probe(newProbeLog()))
    tell(ref, { type: 'Push', n: 7 })
    const items = await ask<ProbeMsg, number[]>(ref, (reply) => ({ type: 'Get', reply }), 1000)
    expect(items).toEqual([7])
  })

  it('rejects with AskTimeoutError (code APIARY_ASK_TIMEOUT) when no reply comes in time', async () => {
    start()
    const ref = kernel.spawn<null, { type: 'Ignore'; reply: (n: number) => void }>('silent/1', {
      kind: 'silent',
      init: () => null,
      handle: (state) => state,
    })
    const answer = ask<{ type: 'Ignore'; reply: (n: number) => void }, number>(ref, (reply) => ({ type: 'Ignore', reply }), 500)
    await settle()
    clock.advance(499)
    await settle()
    clock.advance(1)
    await expect(answer).rejects.toBeInstanceOf(AskTimeoutError)
    await expect(answer).rejects.toMatchObject({ code: 'APIARY_ASK_TIMEOUT' })
  })

  it('rejects with ActorStoppedError when the target is already stopped', async () => {
    start()
    const ref = kernel.spawn('probe/gone', probe(newProbeLog()))
    await kernel.stop('probe/gone')
    const answer = ask<ProbeMsg, number[]>(ref, (reply) => ({ type: 'Get', reply }), 1000)
    await expect(answer).rejects.toBeInstanceOf(ActorStoppedError)
    await expect(answer).rejects.toMatchObject({ code: 'APIARY_ACTOR_STOPPED' })
  })

  it('rejects a pending ask with ActorStoppedError when its target stops before replying', async () => {
    start()
    type Msg = { type: 'Keep'; reply: (n: number) => void }
    const ref = kernel.spawn<null, Msg>('hoarder/1', { kind: 'hoarder', init: () => null, handle: (s) => s })
    const answer = ask<Msg, number>(ref, (reply) => ({ type: 'Keep', reply }), 60_000)
    await settle()
    await kernel.stop('hoarder/1')
    await expect(answer).rejects.toBeInstanceOf(ActorStoppedError)
  })

  it('rejects with MailboxFullError when the target’s mailbox is full', async () => {
    start()
    let release!: () => void
    const until = new Promise<void>((resolve) => {
      release = resolve
    })
    const ref = kernel.spawn('probe/full', probe(newProbeLog(), { mailboxCapacity: 1 }))
    tell(ref, { type: 'Hold', until })
    const answer = ask<ProbeMsg, number[]>(ref, (reply) => ({ type: 'Get', reply }), 1000)
    await expect(answer).rejects.toBeInstanceOf(MailboxFullError)
    release()
  })

  it('routes 100k concurrent replies each to its own asker', async () => {
    start()
    const total = 100_000
    type Msg = { type: 'Echo'; n: number; reply: (n: number) => void }
    const held: Msg[] = []
    const ref = kernel.spawn<null, Msg>('echo/1', {
      kind: 'echo',
      mailboxCapacity: total,
      init: () => null,
      handle: (state, msg) => {
        held.push(msg)
        // every ask is in flight at once; answer in reverse order so any mix-up would show
        if (held.length === total) for (const m of held.reverse()) m.reply(m.n)
        return state
      },
    })
    const answers = Array.from({ length: total }, (_, n) => ask<Msg, number>(ref, (reply) => ({ type: 'Echo', n, reply }), 60_000))
    const results = await Promise.all(answers)
    expect(results.every((value, n) => value === n)).toBe(true)
  })
})

describe('bounded mailbox', () => {
  it('admits exactly mailboxCapacity messages, refuses the next and reports it as overflow', async () => {
    start()
    const events = recordEvents(kernel)
    let release!: () => void
    const until = new Promise<void>((resolve) => {
      release = resolve
    })
    const log = newProbeLog()
    const ref = kernel.spawn('probe/bounded', probe(log, { mailboxCapacity: 3 }))
    expect(tell(ref, { type: 'Hold', until })).toBe(true)
    expect(tell(ref, { type: 'Push', n: 1 })).toBe(true)
    expect(tell(ref, { type: 'Push', n: 2 })).toBe(true)
    expect(tell(ref, { type: 'Push', n: 3 })).toBe(false)
    expect(kernel.stats('probe/bounded')).toEqual({ queued: 3, dropped: 1 })
    expect(events.of('overflow', 'probe/bounded')).toEqual([
      { type: 'overflow', path: 'probe/bounded', kind: 'probe', supervisor: 'root/probe', dropped: 1 },
    ])
    release()
    await waitTurns(() => log.handled.length === 2)
    expect(log.handled).toEqual([1, 2])
    expect(kernel.stats('probe/bounded')?.queued).toBe(0)
    expect(tell(ref, { type: 'Push', n: 4 })).toBe(true)
  })

  it('coalesces a flood of drops into one trailing overflow event per interval with the exact count', async () => {
    start({ overflowReportMs: 1000 })
    const events = recordEvents(kernel)
    let release!: () => void
    const until = new Promise<void>((resolve) => {
      release = resolve
    })
    const ref = kernel.spawn('probe/flood', probe(newProbeLog(), { mailboxCapacity: 1 }))
    tell(ref, { type: 'Hold', until })
    for (let i = 0; i < 500; i++) tell(ref, { type: 'Push', n: i })
    expect(events.of('overflow').map((e) => e.dropped)).toEqual([1])
    clock.advance(999)
    expect(events.of('overflow')).toHaveLength(1)
    clock.advance(1)
    expect(events.of('overflow').map((e) => e.dropped)).toEqual([1, 499])
    expect(kernel.stats('probe/flood')?.dropped).toBe(500)
    release()
  })

  it('refuses a message without a string type and reports invalid-message', async () => {
    start()
    const events = recordEvents(kernel)
    const ref = kernel.spawn('probe/typed', probe(newProbeLog()))
    expect(tell(ref, null as unknown as ProbeMsg)).toBe(false)
    expect(tell(ref, { kind: 'Push' } as unknown as ProbeMsg)).toBe(false)
    expect(events.of('invalid-message', 'probe/typed')).toHaveLength(2)
  })
})

describe('typed refs', () => {
  type A = { type: 'A'; a: number }
  type B = { type: 'B'; b: string }

  it('refuses at compile time a message the ref’s actor does not accept', () => {
    start()
    const refOfA: TypedRef<A> = kernel.spawn<null, A>('typed/a', { kind: 'typed', init: () => null, handle: (s) => s })
    const messageOfB: B = { type: 'B', b: 'x' }
    // never called: the assertion is that tsc --noEmit consumes the expect-error
    // @ts-expect-error a ref to an actor of A does not take B
    const misuse = () => tell(refOfA, messageOfB)
    expect(misuse).toBeTypeOf('function')
    // contravariance: a ref that takes A | B may be used where a ref that takes A is wanted, not the reverse
    const wide = kernel.spawn<null, A | B>('typed/ab', { kind: 'typed', init: () => null, handle: (s) => s })
    const narrowed: TypedRef<A> = wide
    // @ts-expect-error a ref that takes only A cannot stand for one that takes A | B
    const widened: TypedRef<A | B> = refOfA
    expect([narrowed.path, widened.path]).toEqual(['typed/ab', 'typed/a'])
  })
})

describe('offering a result again until the actor takes it', () => {
  it('retries while the actor is down and delivers once it is back; gives up at once on a stopped one', async () => {
    const clock = new ManualClock()
    const k = createKernel({ clock, random: () => 0 })
    const log = newProbeLog()
    const ref = k.spawn(
      'probe/later',
      probe(log, { policy: { ...quickBackoff, maxRestarts: 0, respawn: { minMs: 1000, maxMs: 1000, jitter: 0 } } }),
    )
    const events = recordEvents(k)
    tell(ref, { type: 'Boom' })
    await events.waitFor('gave-up', 'probe/later')
    let gaveUp = 0
    tellUntilTaken(ref, { type: 'Push', n: 7 }, { everyMs: 100, forMs: 5000, onGiveUp: () => gaveUp++ })
    expect(log.handled).toEqual([])
    clock.advance(1000)
    await events.waitFor('restarted', 'probe/later')
    clock.advance(100)
    await waitTurns(() => log.handled.length === 1)
    expect(log.handled).toEqual([7])
    await k.stop('probe/later')
    tellUntilTaken(ref, { type: 'Push', n: 8 }, { everyMs: 100, forMs: 5000, onGiveUp: () => gaveUp++ })
    expect(gaveUp).toBe(1)
    await k.shutdown()
  })
})

describe('messages an actor that gives up never handles', () => {
  it('are handed to onDropped in order, before the asks they carry fail with ActorDownError', async () => {
    const clock = new ManualClock()
    const k = createKernel({ clock, random: () => 0 })
    const log = newProbeLog()
    const seen: string[] = []
    let release = () => {}
    const until = new Promise<void>((r) => {
      release = r
    })
    const def = probe(log, { policy: { ...quickBackoff, maxRestarts: 0, respawn: { minMs: 1000, maxMs: 1000, jitter: 0 } } })
    const ref = k.spawn('probe/dropped', {
      ...def,
      onDropped: (msg) => {
        // the ask's reply is still open here: the hook can answer it truthfully
        if (msg.type === 'Get') msg.reply([42])
        seen.push(msg.type === 'Push' ? `Push ${msg.n}` : msg.type)
      },
    })
    const events = recordEvents(k)
    tell(ref, { type: 'Hold', until })
    tell(ref, { type: 'Boom' })
    tell(ref, { type: 'Push', n: 1 })
    const answered = ask<ProbeMsg, number[]>(ref, (reply) => ({ type: 'Get', reply }), 5_000)
    tell(ref, { type: 'Push', n: 2 })
    release()
    await events.waitFor('gave-up', 'probe/dropped')
    expect(seen).toEqual(['Push 1', 'Get', 'Push 2'])
    expect(await answered).toEqual([42])
    expect(log.handled).toEqual([])
    await k.shutdown()
  })
})

describe('PendingAsks (the asks one actor still owes an answer)', () => {
  it('removes any node in O(1), ignores a second removal, and hands over what is left once', () => {
    const list = new PendingAsks()
    const failed: string[] = []
    const fail = (name: string) => () => failed.push(name)
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((n) => list.add(fail(n)))
    list.remove(b!)
    list.remove(d!)
    list.remove(b!)
    const left = list.takeAll()
    for (const f of left) f(new Error('stopped'))
    expect(failed.sort()).toEqual(['a', 'c'])
    // removed after the hand-over, or twice: nothing else is touched
    list.remove(a!)
    list.remove(c!)
    expect(list.takeAll()).toEqual([])
    const e = list.add(fail('e'))
    list.remove(a!)
    expect(list.takeAll()).toHaveLength(1)
    list.remove(e)
  })

  it('rejects every ask still waiting when its actor stops, and none that was answered', async () => {
    start()
    type M = { type: 'Q'; answer: boolean; reply: (n: number) => void }
    const ref = kernel.spawn<null, M>('asks/1', {
      kind: 'asks',
      init: () => null,
      handle: (state, msg) => {
        if (msg.answer) msg.reply(1)
        return state
      },
    })
    const answered = ask<M, number>(ref, (reply) => ({ type: 'Q', answer: true, reply }), 60_000)
    const waiting = [1, 2, 3].map(() => ask<M, number>(ref, (reply) => ({ type: 'Q', answer: false, reply }), 60_000))
    expect(await answered).toBe(1)
    await kernel.stop(ref.path)
    for (const w of waiting) await expect(w).rejects.toBeInstanceOf(ActorStoppedError)
  })
})
