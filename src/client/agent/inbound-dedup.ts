// The inbound guard's memory of delivered events: a reconnect's overlap re-sends what the application already
// has, and this drops it. Bounded in size (cap), unlike nostr-tools' unbounded set.
//
// An entry must outlive every resume that can bring its event back: a resumed REQ asks from its
// subscription's resume point (`floor`, unix seconds), however long the outage was, so an entry is kept while
// its event's created_at is at or past the floor. Expiring by arrival time alone let an outage longer than the
// window minus the overlap deliver duplicates. The arrival window only adds retention on top.

export interface DedupOptions {
  windowMs: number
  maxIds: number
}

interface Entry {
  key: string
  scope: string
  createdAt: number
  arrivedMs: number
}

export class InboundDedup {
  private readonly seen = new Map<string, Entry>()
  /**
   * The entries in arrival order, oldest from `head` on (some already swept): eviction takes the oldest from
   * here, not as a Map's first key, because V8 keeps a deleted entry's hole until the table is rebuilt and every
   * new iterator steps over them: at tens of thousands of ids that cost dominated every admission.
   */
  private order: Entry[] = []
  private head = 0
  /** per scope (a subscription), the oldest created_at a resumed REQ can bring back */
  private readonly floors = new Map<string, number>()
  /** admissions left before the next sweep of a full map: a sweep that freed nothing is not repeated per event */
  private sweepCooldown = 0
  dropped = 0

  constructor(private readonly opts: DedupOptions) {}

  /** true the first time an event is seen in `scope`; false for a repeat (and counts it) */
  admit(scope: string, id: string, createdAtSeconds: number, nowMs: number): boolean {
    const key = `${scope}:${id}`
    if (this.seen.has(key)) {
      this.dropped++
      return false
    }
    if (this.seen.size >= this.opts.maxIds) this.makeRoom(nowMs)
    const entry = { key, scope, createdAt: createdAtSeconds, arrivedMs: nowMs }
    this.seen.set(key, entry)
    this.order.push(entry)
    return true
  }

  /** the scope's next resume asks from `sinceSeconds` on; it only moves forward */
  setFloor(scope: string, sinceSeconds: number): void {
    this.floors.set(scope, Math.max(this.floors.get(scope) ?? Number.NEGATIVE_INFINITY, sinceSeconds))
  }

  /** the scope ended (unsubscribed): its entries can go */
  forget(scope: string): void {
    this.floors.delete(scope)
  }

  get size(): number {
    return this.seen.size
  }

  /** expired entries first, then the oldest arrivals */
  private makeRoom(nowMs: number): void {
    if (this.sweepCooldown > 0) this.sweepCooldown--
    else {
      for (const [key, e] of this.seen) if (this.isExpired(e, nowMs)) this.seen.delete(key)
      if (this.seen.size >= this.opts.maxIds) this.sweepCooldown = Math.ceil(this.opts.maxIds / 64)
    }
    while (this.seen.size >= this.opts.maxIds && this.head < this.order.length) {
      const oldest = this.order[this.head++]!
      // a swept entry whose id came again is a newer entry under the same key: that one stays
      if (this.seen.get(oldest.key) === oldest) this.seen.delete(oldest.key)
    }
    if (this.head > 1_024 && this.head * 2 > this.order.length) {
      this.order = this.order.slice(this.head).filter((e) => this.seen.get(e.key) === e)
      this.head = 0
    }
  }

  private isExpired(e: Entry, nowMs: number): boolean {
    if (nowMs - e.arrivedMs < this.opts.windowMs) return false
    const floor = this.floors.get(e.scope)
    return floor === undefined || e.createdAt < floor
  }
}
