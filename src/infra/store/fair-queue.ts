// Reads waiting for one of the node's readers (SQLite read workers, PostgreSQL read connections), which every
// community on the node shares: a reader that frees goes to the waiting community that holds the fewest, so one
// community's clients keep another's read waiting for at most one of their reads (docs/architecture.md §9).

/** Items queued per community; `shift` takes from the community holding the fewest readers, oldest first. */
export class FairQueue<T extends { community: string }> {
  // Map order is the order communities are served in among equals: a community served goes to the back
  private readonly byCommunity = new Map<string, T[]>()
  private count = 0

  get length(): number {
    return this.count
  }

  /** items of one community waiting */
  lengthOf(community: string): number {
    return this.byCommunity.get(community)?.length ?? 0
  }

  push(item: T): void {
    const queue = this.byCommunity.get(item.community)
    if (queue) queue.push(item)
    else this.byCommunity.set(item.community, [item])
    this.count++
  }

  /** false when the item is no longer waiting */
  remove(item: T): boolean {
    const queue = this.byCommunity.get(item.community)
    const i = queue?.indexOf(item) ?? -1
    if (!queue || i < 0) return false
    queue.splice(i, 1)
    if (queue.length === 0) this.byCommunity.delete(item.community)
    this.count--
    return true
  }

  /** the next item to start: `holding(community)` is how many readers that community's reads hold now */
  shift(holding: (community: string) => number): T | undefined {
    let next: string | undefined
    let fewest = Number.POSITIVE_INFINITY
    for (const community of this.byCommunity.keys()) {
      const held = holding(community)
      if (held < fewest) [next, fewest] = [community, held]
    }
    if (next === undefined) return undefined
    const queue = this.byCommunity.get(next)!
    const item = queue.shift()!
    this.byCommunity.delete(next)
    if (queue.length > 0) this.byCommunity.set(next, queue)
    this.count--
    return item
  }

  /** every item, emptying the queue */
  drain(): T[] {
    const all = [...this.byCommunity.values()].flat()
    this.byCommunity.clear()
    this.count = 0
    return all
  }
}
