import { describe, expect, it } from 'vitest'
import { createPhiAccrual, PHI_ACCRUAL_DEFAULTS, type PhiAccrual, phiOf } from '../../../src/protocols/mesh/phi-accrual'

const INTERVAL_MS = 2000

/** A peer that heartbeats every 2 s ± a few ms of jitter, `count` times from t = 0. */
function regularPeer(count: number, d: PhiAccrual = createPhiAccrual()): PhiAccrual {
  let t = 0
  for (let i = 0; i < count; i++) {
    d.heartbeat(t)
    t += INTERVAL_MS + (i % 2 === 0 ? 3 : -3)
  }
  return d
}

/** Ms of silence after the last heartbeat at which the detector first stops reporting the peer available. */
function convictionDelayMs(d: PhiAccrual): number {
  const last = d.lastHeartbeatMs!
  for (let silenceMs = 0; silenceMs < 60_000; silenceMs++) if (!d.isAvailable(last + silenceMs)) return silenceMs
  throw new Error('never convicted')
}

/** Akka's formula verbatim, as the reference our rearranged form must agree with. */
function akkaPhi(timeDiffMs: number, meanMs: number, stdDeviationMs: number): number {
  const y = (timeDiffMs - meanMs) / stdDeviationMs
  const e = Math.exp(-y * (1.5976 + 0.070566 * y * y))
  return timeDiffMs > meanMs ? -Math.log10(e / (1 + e)) : -Math.log10(1 - 1 / (1 + e))
}

describe('phi-accrual failure detector before any heartbeat', () => {
  it('reports phi 0 and the peer available: nothing is known yet', () => {
    const d = createPhiAccrual()
    expect(d.lastHeartbeatMs).toBeUndefined()
    expect(d.phi(1_000_000)).toBe(0)
    expect(d.isAvailable(1_000_000)).toBe(true)
  })

  it('seeds the window as Akka does: two samples, mean = estimate, stddev = estimate / 4', () => {
    const d = createPhiAccrual({ firstHeartbeatEstimateMs: 1000 })
    expect(d.sampleCount).toBe(2)
    expect(d.meanIntervalMs).toBe(1000)
    expect(d.stdDeviationMs).toBe(250)
  })
})

describe('suspecting a peer from its silence', () => {
  it('raises phi monotonically with silence, strictly once past mean + acceptable pause', () => {
    const d = regularPeer(20)
    const last = d.lastHeartbeatMs!
    let previous = -1
    for (let silenceMs = 0; silenceMs <= 30_000; silenceMs += 50) {
      const phi = d.phi(last + silenceMs)
      if (silenceMs > 4000) expect(phi).toBeGreaterThan(previous)
      else expect(phi).toBeGreaterThanOrEqual(previous)
      previous = phi
    }
  })

  it('keeps a regular peer available through one missed beat plus a 2 s stall (4 s of silence)', () => {
    const d = regularPeer(20)
    const last = d.lastHeartbeatMs!
    expect(d.phi(last + 4000)).toBeLessThan(3)
    expect(d.isAvailable(last + 4000)).toBe(true)
  })

  it('suspects a killed peer 4546 ms after its last heartbeat: not before 4 s, by 6 s', () => {
    const d = regularPeer(20)
    const delayMs = convictionDelayMs(d)
    expect(delayMs).toBeGreaterThanOrEqual(4000)
    expect(delayMs).toBeLessThanOrEqual(6000)
    // mean 2000 + pause 1500 + 5.23 × the 200 ms floor
    expect(Math.abs(delayMs - 4546)).toBeLessThanOrEqual(5)
    expect(d.isAvailable(d.lastHeartbeatMs! + 6000)).toBe(false)
  })

  it('suspects a peer killed after its third heartbeat within 6 s, and after its first within 7 s (seed stddev)', () => {
    expect(convictionDelayMs(regularPeer(3))).toBeLessThan(6000)
    const afterFirst = convictionDelayMs(regularPeer(1))
    expect(afterFirst).toBeGreaterThan(6000)
    expect(afterFirst).toBeLessThan(7000)
  })

  it('learns a stddev above the floor from a jittery peer (intervals 1–3 s) and waits longer to convict it', () => {
    const jitteryIntervalsMs = [1000, 3000, 1500, 2500, 2000, 1200, 2800, 1800]
    const d = createPhiAccrual()
    let t = 0
    for (let i = 0; i < 100; i++) {
      d.heartbeat(t)
      t += jitteryIntervalsMs[i % jitteryIntervalsMs.length]!
    }
    expect(d.stdDeviationMs).toBeGreaterThan(PHI_ACCRUAL_DEFAULTS.minStdDeviationMs)
    expect(convictionDelayMs(d)).toBeGreaterThan(convictionDelayMs(regularPeer(100)))
  })

  it('keeps phi finite and over the threshold for silences long enough to overflow the formula', () => {
    const d = regularPeer(20)
    const last = d.lastHeartbeatMs!
    for (const silenceMs of [1e6, 1e12, 1e300, Number.MAX_VALUE, Number.POSITIVE_INFINITY]) {
      const phi = d.phi(last + silenceMs)
      expect(Number.isFinite(phi)).toBe(true)
      expect(phi).toBeGreaterThanOrEqual(PHI_ACCRUAL_DEFAULTS.thresholdPhi)
    }
    expect(Number.isFinite(d.phi(Number.NaN))).toBe(true)
  })

  it("agrees with Akka's two-branch logistic formula wherever that one is finite", () => {
    for (let timeDiffMs = 0; timeDiffMs <= 8000; timeDiffMs += 125) {
      const expected = akkaPhi(timeDiffMs, 4000, 200)
      expect(Math.abs(phiOf(timeDiffMs, 4000, 200) - expected)).toBeLessThanOrEqual(1e-9 * Math.max(1, expected))
    }
  })
})

describe('the window of heartbeat intervals', () => {
  it('holds maxSampleSize intervals after 10,000 heartbeats and has forgotten the seed', () => {
    const d = regularPeer(10_000)
    expect(d.sampleCount).toBe(PHI_ACCRUAL_DEFAULTS.maxSampleSize)
    expect(d.meanIntervalMs).toBeCloseTo(INTERVAL_MS, 6)
    // the seed's 1500/2500 would give a stddev near 50 ms; only the ±3 ms jitter is left
    expect(d.stdDeviationMs).toBeCloseTo(3, 6)
  })

  it('drops the oldest interval first', () => {
    const d = createPhiAccrual({ maxSampleSize: 3 })
    let t = 0
    const beatAfter = (intervalMs: number) => {
      t += intervalMs
      d.heartbeat(t)
    }
    d.heartbeat(t)
    ;[1000, 2000, 3000].forEach(beatAfter)
    expect(d.meanIntervalMs).toBe(2000)
    beatAfter(4000)
    expect(d.meanIntervalMs).toBe(3000)
    expect(d.sampleCount).toBe(3)
  })

  it('keeps mean and stddev true to the window over a million fractional-ms intervals (running sums do not drift)', () => {
    const d = createPhiAccrual()
    const intervalsMs: number[] = []
    let t = 0
    d.heartbeat(t)
    for (let i = 0; i < 1_000_000; i++) {
      const next = t + 1999.7 + ((i * 7919) % 601) / 1000
      intervalsMs.push(next - t)
      t = next
      d.heartbeat(t)
    }
    const windowMs = intervalsMs.slice(-PHI_ACCRUAL_DEFAULTS.maxSampleSize)
    const meanMs = windowMs.reduce((a, b) => a + b) / windowMs.length
    const stdMs = Math.sqrt(windowMs.reduce((a, b) => a + (b - meanMs) ** 2, 0) / windowMs.length)
    expect(Math.abs(d.meanIntervalMs - meanMs)).toBeLessThan(1e-7)
    // without the periodic re-sum the sum of squares drifts to an error of ~4e-6 here
    expect(Math.abs(d.stdDeviationMs - stdMs)).toBeLessThan(1e-7)
  })

  it('leaves mean and stddev unchanged when an interval is skipped, yet restarts the silence', () => {
    const d = regularPeer(20)
    const before = { count: d.sampleCount, mean: d.meanIntervalMs, std: d.stdDeviationMs }
    const lateMs = d.lastHeartbeatMs! + 4500
    d.skipInterval(lateMs)
    expect({ count: d.sampleCount, mean: d.meanIntervalMs, std: d.stdDeviationMs }).toEqual(before)
    expect(d.lastHeartbeatMs).toBe(lateMs)
    expect(d.isAvailable(lateMs + 2000)).toBe(true)
  })

  it('learns the interval of a heartbeat that arrives while the peer is available', () => {
    const d = regularPeer(20)
    const count = d.sampleCount
    d.heartbeat(d.lastHeartbeatMs! + 3500)
    expect(d.sampleCount).toBe(count + 1)
  })

  it('does not learn the outage when a suspected peer heartbeats again, and counts it available again', () => {
    const d = regularPeer(20)
    const before = { count: d.sampleCount, mean: d.meanIntervalMs }
    const backMs = d.lastHeartbeatMs! + 30_000
    expect(d.isAvailable(backMs)).toBe(false)
    d.heartbeat(backMs)
    expect({ count: d.sampleCount, mean: d.meanIntervalMs }).toEqual(before)
    expect(d.isAvailable(backMs + INTERVAL_MS)).toBe(true)
  })
})

describe('configuring the detector', () => {
  it.each([
    { name: 'a zero stddev floor', opts: { minStdDeviationMs: 0 } },
    { name: 'an empty window', opts: { maxSampleSize: 0 } },
    { name: 'a fractional window', opts: { maxSampleSize: 1.5 } },
    { name: 'a zero threshold', opts: { thresholdPhi: 0 } },
    { name: 'a negative pause', opts: { acceptableHeartbeatPauseMs: -1 } },
    { name: 'a zero first estimate', opts: { firstHeartbeatEstimateMs: 0 } },
  ])('refuses $name', ({ opts }) => {
    expect(() => createPhiAccrual(opts)).toThrow(RangeError)
  })

  it('honours a lower threshold by convicting sooner', () => {
    const strict = regularPeer(20, createPhiAccrual({ thresholdPhi: 1 }))
    expect(convictionDelayMs(strict)).toBeLessThan(convictionDelayMs(regularPeer(20)))
  })
})
