// How many reads (REQ, COUNT) of one community run at once, and how many may wait: a burst of REQs queues
// in a bounded place, not in the database's connection pool.

/** Reads in flight at once; past `maxRunning` they wait, and past `maxWaiting` they are refused (`error:`). */
export class ReadSlots {
  private running = 0
  private readonly waiting: (() => void)[] = []

  constructor(
    private readonly maxRunning: number,
    private readonly maxWaiting: number,
  ) {}

  /** a place for one read, or undefined when too many wait; the place is free once the read settles */
  take(): { run<T>(read: () => Promise<T>): Promise<T> } | undefined {
    const free = () => this.done()
    if (this.running < this.maxRunning) {
      this.running++
      return { run: (read) => read().finally(free) }
    }
    if (this.waiting.length >= this.maxWaiting) return undefined
    const turn = new Promise<void>((resolve) => this.waiting.push(resolve))
    return { run: (read) => turn.then(read).finally(free) }
  }

  private done(): void {
    // the freed place passes to the next read waiting, if any
    const next = this.waiting.shift()
    if (next) next()
    else this.running--
  }
}
