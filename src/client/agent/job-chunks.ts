// The chunks of one requested job as the requester reads them: in `seq` order within a generation whatever
// order they arrived in, each once, and from `seq` 0 again when a higher generation (the job reassigned)
// begins. Every iterator reads the whole stream from its start, so one begun after the call settled misses nothing.
import type { JobChunk } from './job-types.js'

/** how far ahead of the next expected `seq` a chunk is held: an agent's gap must not grow the requester's memory unbounded */
export const MAX_CHUNKS_AHEAD = 1024

export class ChunkStream implements AsyncIterable<JobChunk> {
  private readonly delivered: JobChunk[] = []
  /** arrived ahead of `nextSeq`, by seq */
  private readonly ahead = new Map<number, string>()
  private generation = 0
  private nextSeq = 0
  private ended = false
  private waiters: (() => void)[] = []

  push(generation: number, seq: number, data: string): void {
    if (this.ended || generation < this.generation) return
    if (generation > this.generation) {
      this.generation = generation
      this.nextSeq = 0
      this.ahead.clear()
    }
    if (seq < this.nextSeq || this.ahead.has(seq) || seq - this.nextSeq >= MAX_CHUNKS_AHEAD) return
    this.ahead.set(seq, data)
    const before = this.delivered.length
    for (let next = this.ahead.get(this.nextSeq); next !== undefined; next = this.ahead.get(this.nextSeq)) {
      this.ahead.delete(this.nextSeq)
      this.delivered.push({ data: next, seq: this.nextSeq, generation })
      this.nextSeq++
    }
    if (this.delivered.length > before) this.wake()
  }

  /** the call settled: iterators end after what was delivered; chunks still waiting behind a gap are dropped */
  end(): void {
    this.ended = true
    this.ahead.clear()
    this.wake()
  }

  async *[Symbol.asyncIterator](): AsyncIterator<JobChunk> {
    for (let i = 0; ; ) {
      if (i < this.delivered.length) yield this.delivered[i++]!
      else if (this.ended) return
      else await new Promise<void>((resolve) => this.waiters.push(resolve))
    }
  }

  private wake(): void {
    const waiters = this.waiters
    this.waiters = []
    for (const w of waiters) w()
  }
}
