// How many reads (REQ, COUNT) of one community run at once, and how many may wait: a burst of REQs queues
// in a bounded place, not in the database's connection pool. One connection holds at most a share of the
// places, and a place that frees goes to the waiting connection holding the fewest: a socket that sends a
// burst of costly REQs waits behind itself, never in front of another client's read.

/** Reads in flight at once; past `maxRunning` (or a connection's share) they wait, past `maxWaiting` they are refused. */
export class ReadSlots {
  private running = 0
  private readonly runningBy = new Map<string, number>()
  // Map order is the order connections are served in among equals: a connection served goes to the back
  private readonly waiting = new Map<string, (() => void)[]>()
  private waitingCount = 0

  constructor(
    private readonly maxRunning: number,
    private readonly maxWaiting: number,
    private readonly maxRunningPerConnection: number,
  ) {}

  /** a place for one read of connection `conn`, or undefined when too many wait; it frees once the read settles */
  take(conn: string): { run<T>(read: () => Promise<T>): Promise<T> } | undefined {
    const free = () => this.done(conn)
    if (this.running < this.maxRunning && this.held(conn) < this.maxRunningPerConnection) {
      this.start(conn)
      return { run: (read) => read().finally(free) }
    }
    if (this.waitingCount >= this.maxWaiting) return undefined
    const turn = new Promise<void>((resolve) => {
      const queue = this.waiting.get(conn)
      if (queue) queue.push(resolve)
      else this.waiting.set(conn, [resolve])
      this.waitingCount++
    })
    return { run: (read) => turn.then(read).finally(free) }
  }

  private held(conn: string): number {
    return this.runningBy.get(conn) ?? 0
  }

  private start(conn: string): void {
    this.running++
    this.runningBy.set(conn, this.held(conn) + 1)
  }

  private done(conn: string): void {
    this.running--
    const held = this.held(conn) - 1
    if (held > 0) this.runningBy.set(conn, held)
    else this.runningBy.delete(conn)
    this.startWaiting()
  }

  /** free places go to the waiting connections below their share, the one holding the fewest first */
  private startWaiting(): void {
    while (this.running < this.maxRunning) {
      let next: string | undefined
      let fewest = this.maxRunningPerConnection
      for (const conn of this.waiting.keys()) {
        const held = this.held(conn)
        if (held < fewest) [next, fewest] = [conn, held]
      }
      if (next === undefined) return
      const queue = this.waiting.get(next)!
      const go = queue.shift()!
      this.waiting.delete(next)
      if (queue.length > 0) this.waiting.set(next, queue)
      this.waitingCount--
      this.start(next)
      go()
    }
  }
}
