import { describe, expect, it } from 'vitest'
import { cappedBackoffDelayMs, scheduledDelayMs, spreadBackoffDelayMs } from '../../src/protocols/backoff'

// n counts retries from 0: the kernel's restart attempt a (1-based) waits cappedBackoffDelayMs(policy, a − 1, u)
describe('backoff formula', () => {
  const backoff = { minMs: 100, maxMs: 30_000, jitter: 0.2 }

  it('doubles from minMs per attempt and never exceeds maxMs, jitter included (capped)', () => {
    expect([0, 1, 2, 8, 9, 10].map((n) => cappedBackoffDelayMs(backoff, n, 0))).toEqual([100, 200, 400, 25_600, 30_000, 30_000])
    expect(cappedBackoffDelayMs(backoff, 0, 1)).toBe(120)
    expect(cappedBackoffDelayMs(backoff, 8, 1)).toBe(30_000)
  })

  it('stays finite for huge attempt numbers and a zero minMs', () => {
    expect(cappedBackoffDelayMs({ minMs: 0, maxMs: 10, jitter: 0 }, 4999, 1)).toBe(0)
    expect(cappedBackoffDelayMs(backoff, 4999, 0.5)).toBe(30_000)
    expect(spreadBackoffDelayMs(backoff, 4999, 0)).toBe(30_000)
  })

  it('lengthens the schedule by jitter past maxMs only when spreading, and never shortens it', () => {
    expect(spreadBackoffDelayMs(backoff, 10, 1)).toBe(36_000)
    expect(spreadBackoffDelayMs(backoff, 0, 1)).toBe(cappedBackoffDelayMs(backoff, 0, 1))
    for (const n of [0, 3, 20]) {
      expect(spreadBackoffDelayMs(backoff, n, 0)).toBe(scheduledDelayMs(backoff, n))
      expect(cappedBackoffDelayMs(backoff, n, 0)).toBe(scheduledDelayMs(backoff, n))
    }
  })
})
