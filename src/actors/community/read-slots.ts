// How many reads (REQ, COUNT) of one community run at once, and how many each connection may have waiting: a
// burst of REQs queues in a bounded place, not in the database's connection pool. The waiting bound is per
// connection, the only party that controls it: a reconnect storm of thousands of sockets with a REQ each is
// served, while one socket that sends more than its share waits behind itself and past its bound is refused.
// One connection holds at most a share of the running places, and a place that frees goes to the waiting
// connection holding the fewest, so a socket's burst of costly REQs never runs in front of another client's read.

/** A connection with reads waiting: their turns in order, and its place in the line of waiting connections. */
interface Waiter {
  conn: string
  turns: (() => void)[]
  prev: Waiter | undefined
  next: Waiter | undefined
}

/** Reads in flight at once; past `maxRunning` (or a connection's share) they wait, past a connection's waiting bound they are refused. */
export class ReadSlots {
  private running = 0
  private readonly runningBy = new Map<string, number>()
  private readonly waiters = new Map<string, Waiter>()
  // The line is the order connections are served in among equals: a connection served goes to the back. A
  // linked list, not Map order: a connection leaves from anywhere in it, and V8 leaves a deleted Map entry
  // as a hole that every later scan from the front walks again.
  private first: Waiter | undefined
  private last: Waiter | undefined

  constructor(
    private readonly maxRunning: number,
    private readonly maxRunningPerConnection: number,
    private readonly maxWaitingPerConnection: number,
  ) {}

  /** a place for one read of connection `conn`, or undefined when that connection has too many waiting; it frees once the read settles */
  take(conn: string): { run<T>(read: () => Promise<T>): Promise<T> } | undefined {
    const free = () => this.done(conn)
    if (this.running < this.maxRunning && this.held(conn) < this.maxRunningPerConnection) {
      this.start(conn)
      return { run: (read) => read().finally(free) }
    }
    const waiter = this.waiters.get(conn)
    if ((waiter?.turns.length ?? 0) >= this.maxWaitingPerConnection) return undefined
    const turn = new Promise<void>((resolve) => {
      if (waiter) waiter.turns.push(resolve)
      else this.enqueue({ conn, turns: [resolve], prev: undefined, next: undefined })
    })
    return { run: (read) => turn.then(read).finally(free) }
  }

  /**
   * A connection gone: its waiting reads take their turn at once, past `maxRunning` for that moment, and end
   * without reading (every caller checks the connection is still there first), so a socket that closes with
   * its reads waiting leaves nothing in line in front of other clients.
   */
  forget(conn: string): void {
    const w = this.waiters.get(conn)
    if (!w) return
    this.dequeue(w)
    this.waiters.delete(conn)
    for (const go of w.turns) {
      this.start(conn)
      go()
    }
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
      const next = this.next()
      if (!next) return
      const go = next.turns.shift()!
      this.dequeue(next)
      if (next.turns.length > 0) this.enqueue(next)
      else this.waiters.delete(next.conn)
      this.start(next.conn)
      go()
    }
  }

  /**
   * The first connection in line holding none, or else the one holding the fewest. A connection that holds a
   * place holds one of `maxRunning`, so at most that many are passed over before one holding none: the walk
   * is short however many wait.
   */
  private next(): Waiter | undefined {
    let pick: Waiter | undefined
    let fewest = this.maxRunningPerConnection
    for (let w = this.first; w; w = w.next) {
      const held = this.held(w.conn)
      if (held >= fewest) continue
      ;[pick, fewest] = [w, held]
      if (held === 0) break
    }
    return pick
  }

  private enqueue(w: Waiter): void {
    w.prev = this.last
    w.next = undefined
    if (this.last) this.last.next = w
    else this.first = w
    this.last = w
    this.waiters.set(w.conn, w)
  }

  private dequeue(w: Waiter): void {
    if (w.prev) w.prev.next = w.next
    else this.first = w.next
    if (w.next) w.next.prev = w.prev
    else this.last = w.prev
  }
}
