import { describe, expect, it } from 'vitest'
import { agentStateAt, agentTimingOf, isDueForReaping, leaseRemainingMs } from '../../src/protocols/agent-connection-state'

// the relay's defaults: heartbeat 15 s ⇒ suspect past 22.5 s, lease 45 s, reaped 60 s after the lease
const timing = agentTimingOf(15, 60)
const LAST_MS = 1_000_000

describe("an agent connection's state from its last heartbeat", () => {
  it('derives the lease as three heartbeats', () => {
    expect(timing).toEqual({ heartbeatMs: 15_000, leaseMs: 45_000, sessionTimeoutMs: 60_000 })
  })

  it.each([
    [0, 'ACTIVE'],
    [15_000, 'ACTIVE'],
    [22_500, 'ACTIVE'],
    [22_501, 'SUSPECT'],
    [45_000, 'SUSPECT'],
    [45_001, 'ZOMBIE'],
    [105_001, 'ZOMBIE'],
  ] as const)('is %i ms after a heartbeat: %s', (ageMs, state) => {
    expect(agentStateAt(LAST_MS, LAST_MS + ageMs, timing)).toBe(state)
  })

  it.each([
    [45_001, false],
    [105_000, false],
    [105_001, true],
  ] as const)('is due for reaping %i ms after its heartbeat: %s', (ageMs, due) => {
    expect(isDueForReaping(LAST_MS, LAST_MS + ageMs, timing)).toBe(due)
  })

  it('counts the lease remaining down through zero to how long ago it lapsed', () => {
    expect(leaseRemainingMs(LAST_MS, LAST_MS + 10_000, timing)).toBe(35_000)
    expect(leaseRemainingMs(LAST_MS, LAST_MS + 45_000, timing)).toBe(0)
    expect(leaseRemainingMs(LAST_MS, LAST_MS + 50_000, timing)).toBe(-5_000)
  })

  it('scales with a sub-second heartbeat (tests)', () => {
    const short = agentTimingOf(0.2, 0.3)
    expect(agentStateAt(0, 300, short)).toBe('ACTIVE')
    expect(agentStateAt(0, 301, short)).toBe('SUSPECT')
    expect(agentStateAt(0, 601, short)).toBe('ZOMBIE')
    expect(isDueForReaping(0, 900, short)).toBe(false)
    expect(isDueForReaping(0, 901, short)).toBe(true)
  })
})
