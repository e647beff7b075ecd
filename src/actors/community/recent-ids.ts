/**
 * A bounded set of recently stored ids: the inbound duplicate guard (docs/architecture.md §8). It holds at most the last
 * `capacity` ids added, minus those deleted since. Eviction walks a ring of the ids in the order they were added
 * instead of taking a Set's first entry: V8 leaves a deleted entry's hole in place until the table is rebuilt,
 * and every new iterator steps over all of them, so `values().next()` after each add cost O(evicted so far).
 */
export class RecentIds {
  /** id → the number of the add that stored it (its ring slot is that number modulo the capacity) */
  private readonly ids = new Map<string, number>()
  private readonly ring: (string | undefined)[]
  private added = 0

  constructor(private readonly capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 1)
      throw new RangeError(`RecentIds capacity must be a positive integer, got ${capacity}`)
    this.ring = new Array<string | undefined>(capacity).fill(undefined)
  }

  has(id: string): boolean {
    return this.ids.has(id)
  }

  /** an id the store no longer holds (replaced or deleted) must not be answered "duplicate:" any more */
  delete(id: string): void {
    this.ids.delete(id)
  }

  add(id: string): void {
    if (this.ids.has(id)) return
    const slot = this.added % this.capacity
    const oldest = this.ring[slot]
    // the slot's id leaves unless it was deleted and added again since (then a later slot holds it)
    if (oldest !== undefined && this.ids.get(oldest) === this.added - this.capacity) this.ids.delete(oldest)
    this.ring[slot] = id
    this.ids.set(id, this.added++)
  }

  get size(): number {
    return this.ids.size
  }
}
