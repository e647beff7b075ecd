import type { CommunityMsg } from './messages.js'

type Publish = Extract<CommunityMsg, { type: 'Publish' }>

/**
 * The order of a community's writes where it matters (docs/architecture.md §7: kept by sequence, not by blocking the
 * mailbox). A NIP-29 change (create, put-user, edit ...) is decided from the channel's rows, stored, and only
 * then applied to the rows; a write to the same channel arriving meanwhile (a post right behind the 9007 that
 * creates its channel, a new member's post right behind the 9000 that adds them) waits until the change is
 * applied, then is decided on the rows as they are now. Writes to other channels, and plain events, go on.
 * Until the banned event ids are first loaded, every write waits (they are few and load in milliseconds).
 */
export class WriteOrder {
  private readonly busy = new Map<string, { count: number; since: number }>()
  private readonly held = new Map<string, Publish[]>()
  private startup: Publish[] | undefined = []
  private heldCount = 0

  constructor(
    /** writes held at once across the community; past it a write is refused (`error:`) rather than queued */
    private readonly maxHeld: number,
  ) {}

  get ready(): boolean {
    return this.startup === undefined
  }

  /** false: the write must wait (it was held, or refused when too many wait) */
  admit(msg: Publish, channel: string | undefined): 'go' | 'held' | 'full' {
    const queue = this.startup ?? (channel !== undefined && this.busy.has(channel) ? this.queueOf(channel) : undefined)
    if (queue === undefined) return 'go'
    if (this.heldCount >= this.maxHeld) return 'full'
    queue.push(msg)
    this.heldCount++
    return 'held'
  }

  /** a channel change is on its way to the store: later writes to `channel` wait for `end` */
  begin(channel: string, nowMs: number): void {
    const b = this.busy.get(channel)
    if (b) b.count++
    else this.busy.set(channel, { count: 1, since: nowMs })
  }

  /** the change was applied (or failed): the writes that waited for it, in arrival order */
  end(channel: string): Publish[] {
    const b = this.busy.get(channel)
    if (b && --b.count > 0) return []
    this.busy.delete(channel)
    return this.release(this.held.get(channel), () => this.held.delete(channel))
  }

  /** the first load of the banned ids is done: everything held meanwhile, in arrival order */
  started(): Publish[] {
    const waiting = this.startup
    this.startup = undefined
    return this.release(waiting, () => {})
  }

  /** channels busy for longer than `maxAgeMs` (a Saved that could not be delivered): release their writes */
  expire(nowMs: number, maxAgeMs: number): Publish[] {
    const out: Publish[] = []
    for (const [channel, b] of this.busy) {
      if (nowMs - b.since < maxAgeMs) continue
      b.count = 1
      out.push(...this.end(channel))
    }
    return out
  }

  /** every write still waiting (a crash or a stop answers them) */
  drain(): Publish[] {
    const out = [...(this.startup ?? []), ...[...this.held.values()].flat()]
    this.held.clear()
    if (this.startup) this.startup = []
    this.heldCount = 0
    return out
  }

  private queueOf(channel: string): Publish[] {
    let q = this.held.get(channel)
    if (!q) {
      q = []
      this.held.set(channel, q)
    }
    return q
  }

  private release(waiting: Publish[] | undefined, forget: () => void): Publish[] {
    if (!waiting || waiting.length === 0) return []
    forget()
    this.heldCount -= waiting.length
    return waiting
  }
}
