/**
 * The phi-accrual failure detector of Hayashibara et al., shaped after Akka's `PhiAccrualFailureDetector`:
 * instead of a yes/no timeout it turns the silence since a peer's last heartbeat into a suspicion level phi,
 * scaled by how regular that peer's heartbeats have been. Pure: the caller passes monotonic-clock ms.
 *
 * Why these numbers: peers heartbeat every 2 s and a killed peer must be suspected within 6 s. Once a few
 * regular heartbeats have pushed the sample stddev under the 200 ms floor, phi crosses 8 at
 * mean + pause + 5.23·minStd = 2000 + 1500 + 1046 = 4546 ms of silence (the logistic tail needs 5.23
 * stddevs, not the ~4 a rough estimate suggests), while 4 s of silence (one interval plus a 2 s stall)
 * gives phi 2.2.
 * Cold start: right after the first heartbeat the seed stddev is 500 ms, so conviction takes 6113 ms; from
 * the third heartbeat on it is under 6 s (5348 ms). test/faults holds a killed peer to that 6 s bound.
 */

export interface PhiAccrualOptions {
  /** phi at or above this is "suspected"; phi 8 means a 1-in-10^8 chance the peer is merely late */
  thresholdPhi: number
  /** intervals kept; the oldest drops out so memory is fixed and the window follows the peer's recent rhythm */
  maxSampleSize: number
  /** stddev floor, so a perfectly regular peer is not convicted the moment it is a few ms late */
  minStdDeviationMs: number
  /** silence added to the expected interval before suspicion starts to climb: a GC or a busy peer */
  acceptableHeartbeatPauseMs: number
  /** expected interval before any is measured; seeds the window as mean = estimate, stddev = estimate / 4 */
  firstHeartbeatEstimateMs: number
}

export const PHI_ACCRUAL_DEFAULTS: Readonly<PhiAccrualOptions> = Object.freeze({
  // Akka's and Cassandra's default
  thresholdPhi: 8,
  // 200 intervals × 2 s ≈ 6.7 minutes of history (Akka keeps 1000 at 1 s); enough to learn a peer's
  // jitter, short enough to forget a network that has since settled
  maxSampleSize: 200,
  // a tenth of the interval: wide enough that a sub-second hiccup of a metronome-regular peer moves phi little
  minStdDeviationMs: 200,
  // a peer that stalls 2 s (one heartbeat missed, 4 s of silence: phi 2.2) must not be convicted, and a dead
  // one must be within 6 s of its death even before its stddev settles (2000 ms would take 6.6 s on a cold start)
  acceptableHeartbeatPauseMs: 1500,
  // our gossip/heartbeat interval
  firstHeartbeatEstimateMs: 2000,
})

/** Returned for a silence so long that phi overflows; large and finite so comparisons and logs stay sane. */
export const MAX_PHI = Number.MAX_SAFE_INTEGER

export interface PhiAccrual {
  /** a heartbeat arrived at nowMs; its interval joins the window unless the peer was suspected at arrival */
  heartbeat(nowMs: number): void
  /** a heartbeat arrived at nowMs but its interval is not trusted (we were paused); record the time only */
  skipInterval(nowMs: number): void
  phi(nowMs: number): number
  isAvailable(nowMs: number): boolean
  readonly lastHeartbeatMs: number | undefined
  readonly sampleCount: number
  readonly meanIntervalMs: number
  /** the sample (population) stddev of the window, before the minStdDeviationMs floor is applied */
  readonly stdDeviationMs: number
}

export function createPhiAccrual(opts: Partial<PhiAccrualOptions> = {}): PhiAccrual {
  const o: PhiAccrualOptions = { ...PHI_ACCRUAL_DEFAULTS, ...opts }
  checkOptions(o)
  const window = createIntervalWindow(o.maxSampleSize)
  // Akka's seed: two samples one stddev either side of the estimate give exactly mean = estimate, stddev = estimate / 4
  const seedStdDeviationMs = o.firstHeartbeatEstimateMs / 4
  window.add(o.firstHeartbeatEstimateMs - seedStdDeviationMs)
  window.add(o.firstHeartbeatEstimateMs + seedStdDeviationMs)
  let lastHeartbeatMs: number | undefined

  const phi = (nowMs: number): number => {
    if (lastHeartbeatMs === undefined) return 0
    const meanMs = window.mean() + o.acceptableHeartbeatPauseMs
    const stdDeviationMs = Math.max(window.stdDeviation(), o.minStdDeviationMs)
    return phiOf(nowMs - lastHeartbeatMs, meanMs, stdDeviationMs)
  }
  const isAvailable = (nowMs: number) => phi(nowMs) < o.thresholdPhi

  return {
    heartbeat(nowMs) {
      // As Akka: the interval that ends a suspicion is the outage itself, not the peer's rhythm; learning it
      // would widen the window until a real death takes far longer to see. A clock that ran backwards
      // (it should not: monotonic) yields no usable interval either.
      const last = lastHeartbeatMs
      if (last !== undefined && nowMs >= last && isAvailable(nowMs)) window.add(nowMs - last)
      lastHeartbeatMs = nowMs
    },
    skipInterval(nowMs) {
      lastHeartbeatMs = nowMs
    },
    phi,
    isAvailable,
    get lastHeartbeatMs() {
      return lastHeartbeatMs
    },
    get sampleCount() {
      return window.count()
    },
    get meanIntervalMs() {
      return window.mean()
    },
    get stdDeviationMs() {
      return window.stdDeviation()
    },
  }
}

/**
 * Akka's logistic approximation of the normal CDF: with y = (t − mean) / stddev and e = exp(−k), where
 * k = y·(1.5976 + 0.070566·y²), Akka computes −log10(e / (1 + e)) above the mean and −log10(1 − 1/(1 + e))
 * below it. Both are the same quantity, log10(1 + e^k), which is evaluated here in the softplus form: e never
 * underflows to 0 (Akka's Infinity after ≈ 22 stddevs) and phi keeps rising with silence instead of
 * saturating. Only k itself can overflow (y³ beyond 1e308), which is capped.
 */
export function phiOf(timeDiffMs: number, meanMs: number, stdDeviationMs: number): number {
  const y = (timeDiffMs - meanMs) / stdDeviationMs
  const k = y * (1.5976 + 0.070566 * y * y)
  const softplus = k > 0 ? k + Math.log1p(Math.exp(-k)) : Math.log1p(Math.exp(k))
  const phi = softplus / Math.LN10
  // NaN only comes from a NaN clock reading: treat it as suspect so the bug shows, never as healthy
  return Number.isFinite(phi) ? Math.min(phi, MAX_PHI) : MAX_PHI
}

function checkOptions(o: PhiAccrualOptions): void {
  // options come from the validated config, so a bad one is our bug: throw rather than return a Result
  if (!(o.thresholdPhi > 0)) throw new RangeError(`thresholdPhi must be > 0, got ${o.thresholdPhi}`)
  if (!Number.isInteger(o.maxSampleSize) || o.maxSampleSize < 1)
    throw new RangeError(`maxSampleSize must be a positive integer, got ${o.maxSampleSize}`)
  // a zero floor would divide by a zero stddev once every interval is identical
  if (!(o.minStdDeviationMs > 0)) throw new RangeError(`minStdDeviationMs must be > 0, got ${o.minStdDeviationMs}`)
  if (!(o.acceptableHeartbeatPauseMs >= 0))
    throw new RangeError(`acceptableHeartbeatPauseMs must be >= 0, got ${o.acceptableHeartbeatPauseMs}`)
  if (!(o.firstHeartbeatEstimateMs > 0)) throw new RangeError(`firstHeartbeatEstimateMs must be > 0, got ${o.firstHeartbeatEstimateMs}`)
}

/** A fixed-size ring of intervals with running sums, so mean and stddev cost O(1) per heartbeat. */
function createIntervalWindow(capacity: number) {
  const buf = new Float64Array(capacity)
  let start = 0
  let count = 0
  let sumMs = 0
  let sumSquaresMs2 = 0
  let addsSinceResum = 0

  // Subtracting evicted samples from float sums drifts once intervals carry fractional ms; re-adding the
  // window once per full turn bounds the drift at O(1) amortised cost.
  const resum = () => {
    sumMs = 0
    sumSquaresMs2 = 0
    for (let i = 0; i < count; i++) {
      const x = buf[(start + i) % capacity]!
      sumMs += x
      sumSquaresMs2 += x * x
    }
    addsSinceResum = 0
  }

  return {
    add(intervalMs: number) {
      if (count < capacity) {
        buf[(start + count) % capacity] = intervalMs
        count++
      } else {
        const evicted = buf[start]!
        sumMs -= evicted
        sumSquaresMs2 -= evicted * evicted
        buf[start] = intervalMs
        start = (start + 1) % capacity
      }
      sumMs += intervalMs
      sumSquaresMs2 += intervalMs * intervalMs
      if (++addsSinceResum >= capacity) resum()
    },
    count: () => count,
    mean: () => (count === 0 ? 0 : sumMs / count),
    stdDeviation() {
      if (count === 0) return 0
      const mean = sumMs / count
      // cancellation can leave a hair below zero for a constant window; sqrt of that would be NaN
      return Math.sqrt(Math.max(0, sumSquaresMs2 / count - mean * mean))
    },
  }
}
