/**
 * One connection's frames are applied in the order they arrived (docs/architecture.md §6.2: prepare in
 * parallel, apply in order). Each frame gets a sequence number on arrival; its preparation (admission, ban lookups,
 * the signature check) runs beside the actor and may finish in any order; its effect is applied strictly in
 * sequence order from a small reorder buffer. An AUTH is a barrier: frames behind it start preparing only
 * once it is applied, so they are judged (and charged) as the AUTH left the connection. At most
 * `maxInFlight` frames are started and not yet applied; the rest wait, in order, without starting.
 *
 * Single-threaded and re-entrant: `start` may call `prepared` synchronously (a frame with nothing to
 * prepare), and `apply` may call `arrive`; both are picked up by the loop already running.
 */
export interface SequenceHooks<E, R> {
  /** begin preparing entry `seq`; call `prepared(seq, result)` when done (now or later) */
  start(seq: number, entry: E): void
  /** entry `seq`'s turn, in arrival order */
  apply(seq: number, entry: E, result: R): void
}

/** A frame between arrival and its turn; `done` once its preparation finished (with `result`). */
interface Slot<E, R> {
  entry: E
  done: boolean
  result: R | undefined
}

export class FrameSequence<E extends { barrier: boolean }, R> {
  private arrived = 0
  private started = 0
  private applied = 0
  // frames `applied`, `applied + 1`, ... in order. An array, not a Map keyed by seq: a Map that empties
  // allocates a new table on its last delete (V8), and one connection's sequence empties after nearly every
  // frame; that table outlives the young generation (it is the long-lived connection's), so it would be copied
  // and promoted on every frame of every connection. An array keeps its backing store when it empties.
  private readonly window: Slot<E, R>[] = []
  /** a started barrier that is not applied yet: nothing behind it starts */
  private blockedBy: number | undefined
  private pumping = false

  constructor(
    private readonly maxInFlight: number,
    private readonly hooks: SequenceHooks<E, R>,
  ) {
    if (!Number.isInteger(maxInFlight) || maxInFlight < 1) throw new RangeError('maxInFlight must be >= 1')
  }

  /** started and not yet applied */
  get inFlight(): number {
    return this.started - this.applied
  }

  /** arrived and not yet started (behind a barrier or over maxInFlight) */
  get waiting(): number {
    return this.arrived - this.started
  }

  arrive(entry: E): number {
    const seq = this.arrived++
    this.window.push({ entry, done: false, result: undefined })
    this.pump()
    return seq
  }

  prepared(seq: number, result: R): void {
    if (seq < this.applied || seq >= this.started) return
    const slot = this.window[seq - this.applied]!
    if (slot.done) return
    slot.done = true
    slot.result = result
    this.pump()
  }

  private pump(): void {
    if (this.pumping) return
    this.pumping = true
    try {
      for (let progressed = true; progressed; ) {
        progressed = false
        while (this.window.length > 0 && this.window[0]!.done) {
          const slot = this.window.shift()!
          const seq = this.applied++
          if (this.blockedBy === seq) this.blockedBy = undefined
          this.hooks.apply(seq, slot.entry, slot.result as R)
          progressed = true
        }
        while (this.started < this.arrived && this.blockedBy === undefined && this.inFlight < this.maxInFlight) {
          const seq = this.started++
          const entry = this.window[seq - this.applied]!.entry
          if (entry.barrier) this.blockedBy = seq
          this.hooks.start(seq, entry)
          progressed = true
        }
      }
    } finally {
      this.pumping = false
    }
  }
}
