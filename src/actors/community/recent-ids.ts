/** A bounded set of recently stored ids (insertion order eviction): the inbound duplicate guard (DESIGN §6). */
export class RecentIds {
  private readonly ids = new Set<string>()
  constructor(private readonly capacity: number) {}

  has(id: string): boolean {
    return this.ids.has(id)
  }

  /** an id the store no longer holds (replaced or deleted) must not be answered "duplicate:" any more */
  delete(id: string): void {
    this.ids.delete(id)
  }

  add(id: string): void {
    if (this.ids.has(id)) return
    this.ids.add(id)
    if (this.ids.size > this.capacity) {
      const oldest = this.ids.values().next().value
      if (oldest !== undefined) this.ids.delete(oldest)
    }
  }
}
