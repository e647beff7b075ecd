// The inbound guard's memory of delivered events: a reconnect's overlap re-sends what the application already
// has, and this drops it. Bounded in time (window) and in size (cap), unlike nostr-tools' unbounded set.

export interface DedupOptions {
  windowMs: number
  maxIds: number
}

export class InboundDedup {
  // a Map keeps insertion order, which is arrival order: the oldest entries are always at the front
  private readonly seenAt = new Map<string, number>()
  dropped = 0

  constructor(private readonly opts: DedupOptions) {}

  /** true the first time a key is seen within the window; false for a repeat (and counts it) */
  admit(key: string, nowMs: number): boolean {
    this.expire(nowMs)
    if (this.seenAt.has(key)) {
      this.dropped++
      return false
    }
    // expired ids went first (above); past the cap the oldest goes
    while (this.seenAt.size >= this.opts.maxIds) {
      const oldest = this.seenAt.keys().next().value as string
      this.seenAt.delete(oldest)
    }
    this.seenAt.set(key, nowMs)
    return true
  }

  get size(): number {
    return this.seenAt.size
  }

  private expire(nowMs: number): void {
    for (const [key, at] of this.seenAt) {
      if (nowMs - at < this.opts.windowMs) return
      this.seenAt.delete(key)
    }
  }
}
