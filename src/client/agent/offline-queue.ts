// Events published while the agent is not ACTIVE, kept in order and sent after the next handshake. Bounded by
// count and bytes: past either bound the oldest is dropped (and counted), because a long outage must cost
// the agent its oldest work, not its memory.
import type { NostrEvent } from '../../protocols/nip01/event.js'

export interface QueuedEvent {
  event: NostrEvent
  /** the publish order: a send cut short by a drop goes back to its place, not to the end */
  seq: number
  bytes: number
}

export interface OfflineQueueOptions {
  maxEvents: number
  maxBytes: number
}

export class OfflineQueue {
  private readonly items: QueuedEvent[] = []
  private bytes = 0
  dropped = 0

  constructor(
    private readonly opts: OfflineQueueOptions,
    /** an item dropped past a bound */
    private readonly onDrop: (item: QueuedEvent) => void = () => {},
  ) {}

  /** in publish order (`seq`): a retried send re-enters before what was published after it */
  push(event: NostrEvent, seq: number): void {
    const item = { event, seq, bytes: Buffer.byteLength(JSON.stringify(event), 'utf8') }
    let i = this.items.length
    while (i > 0 && this.items[i - 1]!.seq > seq) i--
    this.items.splice(i, 0, item)
    this.bytes += item.bytes
    this.trim()
  }

  shift(): QueuedEvent | undefined {
    const item = this.items.shift()
    if (item) this.bytes -= item.bytes
    return item
  }

  /** the seq of the next item shift() would return */
  peekSeq(): number | undefined {
    return this.items[0]?.seq
  }

  get length(): number {
    return this.items.length
  }

  get byteLength(): number {
    return this.bytes
  }

  ids(): string[] {
    return this.items.map((i) => i.event.id)
  }

  private trim(): void {
    while (this.items.length > this.opts.maxEvents || (this.bytes > this.opts.maxBytes && this.items.length > 1)) {
      const oldest = this.items.shift()!
      this.bytes -= oldest.bytes
      this.dropped++
      this.onDrop(oldest)
    }
  }
}
