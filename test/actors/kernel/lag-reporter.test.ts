import { afterEach, describe, expect, it } from 'vitest'
import { createKernel, createLagReporter, type Kernel } from '../../../src/actors/kernel'
import { recordEvents } from './harness'
import { ManualClock } from './manual-clock'

let kernel: Kernel

afterEach(async () => {
  await kernel.shutdown()
})

describe('reporting a bounded queue that skips', () => {
  it('counts each skip and reports lagged at most once per interval, the first at once, the rest summed', async () => {
    kernel = createKernel()
    const events = recordEvents(kernel)
    const clock = new ManualClock()
    const lag = createLagReporter(kernel, { path: 'probe/slow', kind: 'probe' }, { reportIntervalMs: 1_000, clock })
    for (let n = 0; n < 4; n++) lag.count(1)
    expect(lag.total).toBe(4)
    expect(events.of('lagged')).toEqual([{ type: 'lagged', path: 'probe/slow', kind: 'probe', supervisor: 'root/probe', skipped: 1 }])
    clock.advance(1_000)
    expect(events.of('lagged').map((e) => e.skipped)).toEqual([1, 3])
    lag.count(2)
    lag.dispose()
    expect(events.of('lagged').map((e) => e.skipped)).toEqual([1, 3, 2])
    expect(lag.total).toBe(6)
    expect(clock.pendingTimers()).toBe(0)
  })
})
