import { Subject } from 'rxjs'
import { afterEach, describe, expect, it } from 'vitest'
import { createLagReporter, deliverTo } from '../../../src/actors/bridges/deliver-to'
import { createKernel, type Kernel } from '../../../src/actors/kernel'
import { newProbeLog, type ProbeMsg, probe } from '../kernel/fixtures'
import { recordEvents, waitFor } from '../kernel/harness'
import { ManualClock } from '../kernel/manual-clock'

let kernel: Kernel

afterEach(async () => {
  await kernel.shutdown()
})

describe('delivering bus messages into a mailbox', () => {
  it('tells each message to the watcher actor, in order', async () => {
    kernel = createKernel()
    const log = newProbeLog()
    const ref = kernel.spawn('probe/in-order', probe(log))
    const source = new Subject<number>()
    source.subscribe(deliverTo<number, ProbeMsg>(ref, (n) => ({ type: 'Push', n }), () => {}))
    for (const n of [1, 2, 3]) source.next(n)
    await waitFor(() => log.handled.length === 3)
    expect(log.handled).toEqual([1, 2, 3])
  })

  it('skips what a full mailbox refuses, counts it as lag and reports lagged at most once per interval', async () => {
    kernel = createKernel()
    const events = recordEvents(kernel)
    const log = newProbeLog()
    const ref = kernel.spawn('probe/slow', probe(log, { mailboxCapacity: 2 }))
    let release!: () => void
    // the probe sits on its first message until released, so the mailbox (capacity 2) fills up
    const held = new Promise<void>((resolve) => (release = resolve))
    const clock = new ManualClock()
    const lag = createLagReporter(kernel, { path: ref.path, kind: 'probe' }, { reportIntervalMs: 1_000, clock })
    const source = new Subject<ProbeMsg>()
    source.subscribe(deliverTo<ProbeMsg, ProbeMsg>(ref, (msg) => msg, lag.count))

    source.next({ type: 'Hold', until: held })
    source.next({ type: 'Push', n: 1 })
    for (let n = 2; n <= 5; n++) source.next({ type: 'Push', n })
    expect(lag.total).toBe(4)
    // the first lag is reported at once, the next three together when the interval is over
    expect(events.of('lagged')).toEqual([{ type: 'lagged', path: 'probe/slow', kind: 'probe', skipped: 1 }])
    clock.advance(1_000)
    expect(events.of('lagged').map((e) => e.skipped)).toEqual([1, 3])

    release()
    await waitFor(() => log.handled.length === 1)
    expect(log.handled).toEqual([1])
    source.next({ type: 'Push', n: 6 })
    await waitFor(() => log.handled.length === 2)
    lag.dispose()
    expect(lag.total).toBe(4)
    expect(clock.pendingTimers()).toBe(0)
  })
})
