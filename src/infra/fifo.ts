// Compacting is O(remaining), so do it only once the dead prefix is both large and most of the array.
const COMPACT_AT = 1024

/** FIFO with amortised O(1) shift (Array#shift is O(n), which a 10k-deep mailbox or a slow reader's backlog would feel). */
export class Fifo<T> {
  private items: (T | undefined)[] = []
  private head = 0

  get length(): number {
    return this.items.length - this.head
  }

  push(item: T): void {
    this.items.push(item)
  }

  shift(): T | undefined {
    if (this.head === this.items.length) return undefined
    const item = this.items[this.head]
    this.items[this.head++] = undefined
    if (this.head === this.items.length) this.clear()
    else if (this.head >= COMPACT_AT && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
    return item
  }

  // emptied in place: its owners (an actor's mailbox, a connection's outbound lanes) live long, and a fresh
  // array each time they empty would be one more object copied past the young generation; setting the
  // length releases what a deep queue used
  clear(): void {
    this.items.length = 0
    this.head = 0
  }
}
