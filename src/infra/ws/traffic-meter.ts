// One connection's traffic, counted where its frames cross the socket: cumulative totals bumped in O(1) per
// frame (no allocation), and a ring of the last once-a-second readings the hot-connections sampler turns into
// rates over a 10 s window (infra/console/hot-connections.ts).

/** Readings kept: now and ten seconds back, so a rate spans the whole window once the connection is that old. */
export const TRAFFIC_RING_SLOTS = 11

const FIELDS = 4
const T = 0
const IN_FRAMES = 1
const IN_BYTES = 2
const OUT_BYTES = 3

export interface TrafficRates {
  inFramesPerSecond: number
  inBytesPerSecond: number
  outBytesPerSecond: number
}

export class TrafficMeter {
  inFrames = 0
  inBytes = 0
  outBytes = 0
  // [t, inFrames, inBytes, outBytes] per slot, allocated once
  private readonly ring = new Float64Array(TRAFFIC_RING_SLOTS * FIELDS)
  private newest = 0
  private filled = 1

  /** `openedAtMs`: the first reading, all zero, so a connection flooding from its first second has a rate */
  constructor(openedAtMs: number) {
    this.ring[T] = openedAtMs
  }

  frameIn(bytes: number): void {
    this.inFrames++
    this.inBytes += bytes
  }

  bytesOut(bytes: number): void {
    this.outBytes += bytes
  }

  /** takes a reading (the sampler, once a second) */
  read(nowMs: number): void {
    this.newest = (this.newest + 1) % TRAFFIC_RING_SLOTS
    if (this.filled < TRAFFIC_RING_SLOTS) this.filled++
    const at = this.newest * FIELDS
    this.ring[at + T] = nowMs
    this.ring[at + IN_FRAMES] = this.inFrames
    this.ring[at + IN_BYTES] = this.inBytes
    this.ring[at + OUT_BYTES] = this.outBytes
  }

  /** per second between the oldest reading kept and the newest; written into `into` (reused by the caller) */
  rates(into: TrafficRates): TrafficRates {
    const now = this.newest * FIELDS
    const old = ((this.newest - this.filled + 1 + TRAFFIC_RING_SLOTS) % TRAFFIC_RING_SLOTS) * FIELDS
    const seconds = (this.ring[now + T]! - this.ring[old + T]!) / 1000
    const per = (field: number) => (seconds > 0 ? (this.ring[now + field]! - this.ring[old + field]!) / seconds : 0)
    into.inFramesPerSecond = per(IN_FRAMES)
    into.inBytesPerSecond = per(IN_BYTES)
    into.outBytesPerSecond = per(OUT_BYTES)
    return into
  }
}
