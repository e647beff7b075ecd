import { describe, expect, it } from 'vitest'
import { createLocalPauseGuard, isSuspect, LOCAL_PAUSE_DEFAULTS } from '../../../src/protocols/mesh/local-pause'
import { createPhiAccrual, type PhiAccrual } from '../../../src/protocols/mesh/phi-accrual'

/** A peer that heartbeated every 2 s from t = 0 and then went silent; returns its detector. */
function peerSilentSince(lastHeartbeatMs: number): PhiAccrual {
  const d = createPhiAccrual()
  for (let t = lastHeartbeatMs - 40_000; t <= lastHeartbeatMs; t += 2000) d.heartbeat(t)
  return d
}

describe('suppressing suspicion after a local pause', () => {
  it('suppresses nothing before any pause is noted', () => {
    const g = createLocalPauseGuard()
    expect(g.suppressedUntilMs).toBeUndefined()
    expect(g.isSuppressed(0)).toBe(false)
  })

  it.each([
    { delayMs: LOCAL_PAUSE_DEFAULTS.allowanceMs, suppressed: false },
    { delayMs: LOCAL_PAUSE_DEFAULTS.allowanceMs + 1, suppressed: true },
  ])('suppresses=$suppressed after an event-loop delay of $delayMs ms', ({ delayMs, suppressed }) => {
    const g = createLocalPauseGuard()
    g.notePause(10_000, delayMs)
    expect(g.isSuppressed(10_000)).toBe(suppressed)
  })

  it('stops suppressing exactly graceMs after the pause was noticed', () => {
    const g = createLocalPauseGuard()
    g.notePause(10_000, 3000)
    expect(g.suppressedUntilMs).toBe(10_000 + LOCAL_PAUSE_DEFAULTS.graceMs)
    expect(g.isSuppressed(10_000 + LOCAL_PAUSE_DEFAULTS.graceMs - 1)).toBe(true)
    expect(g.isSuppressed(10_000 + LOCAL_PAUSE_DEFAULTS.graceMs)).toBe(false)
  })

  it('extends the grace on a later pause and never shortens it on an older report', () => {
    const g = createLocalPauseGuard({ allowanceMs: 50, graceMs: 100 })
    g.notePause(1000, 60)
    g.notePause(1050, 60)
    expect(g.suppressedUntilMs).toBe(1150)
    g.notePause(900, 60)
    expect(g.suppressedUntilMs).toBe(1150)
    g.notePause(2000, 50)
    expect(g.suppressedUntilMs).toBe(1150)
  })

  it('defaults to a 1 s allowance that fits between a peer’s worst legitimate silence and its conviction', () => {
    const d = peerSilentSince(40_000)
    const worstLegitimateSilenceMs = 2000 + 1500
    expect(d.isAvailable(40_000 + worstLegitimateSilenceMs + LOCAL_PAUSE_DEFAULTS.allowanceMs)).toBe(true)
    expect(LOCAL_PAUSE_DEFAULTS.graceMs).toBe(5500)
  })

  it.each([
    { name: 'a negative allowance', opts: { allowanceMs: -1 } },
    { name: 'a negative grace', opts: { graceMs: -1 } },
  ])('refuses $name', ({ opts }) => {
    expect(() => createLocalPauseGuard(opts)).toThrow(RangeError)
  })
})

describe('deciding a peer is suspect', () => {
  it('suspects a silent peer when this node has not stalled', () => {
    const d = peerSilentSince(40_000)
    expect(isSuspect(d, createLocalPauseGuard(), 46_000)).toBe(true)
  })

  it('does not suspect a heartbeating peer', () => {
    const d = peerSilentSince(40_000)
    expect(isSuspect(d, createLocalPauseGuard(), 42_000)).toBe(false)
  })

  it('holds off suspecting a silent peer while our own stall is in grace, then suspects it', () => {
    const d = peerSilentSince(40_000)
    const g = createLocalPauseGuard()
    g.notePause(45_000, 4000)
    expect(isSuspect(d, g, 46_000)).toBe(false)
    expect(isSuspect(d, g, 45_000 + LOCAL_PAUSE_DEFAULTS.graceMs - 1)).toBe(false)
    expect(isSuspect(d, g, 45_000 + LOCAL_PAUSE_DEFAULTS.graceMs)).toBe(true)
  })
})
