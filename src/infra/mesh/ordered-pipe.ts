// An ordered stream of items to one peer over tunnel requests (docs/mesh.md §9): what waits goes as one batch,
// one batch in flight at a time, so the peer reads the items in the order they were pushed; each batch spends
// the tunnel's credit like any request body, so a peer that stops reading stops the stream. What the pipe
// holds is bounded: past it an item is refused at the push (the caller answers its sender), and a batch the
// peer did not take (the tunnel closed, a timeout) is dropped and counted, never sent out of order.

export interface OrderedPipeOptions<T> {
  /** sends one batch; resolves once the peer took it */
  send(batch: T[]): Promise<void>
  /** items held at most (waiting and in flight) */
  maxQueued: number
  /** items per batch at most */
  maxBatch: number
  /** a batch the peer did not take */
  dropped(count: number, error: unknown): void
}

export interface OrderedPipe<T> {
  /** false when the pipe is full: the item is not sent */
  push(item: T): boolean
  readonly queued: number
}

export function createOrderedPipe<T>(o: OrderedPipeOptions<T>): OrderedPipe<T> {
  const waiting: T[] = []
  let inFlight = 0
  const next = () => {
    if (inFlight > 0 || waiting.length === 0) return
    const batch = waiting.splice(0, o.maxBatch)
    inFlight = batch.length
    o.send(batch).then(
      () => {
        inFlight = 0
        next()
      },
      (error: unknown) => {
        inFlight = 0
        o.dropped(batch.length, error)
        next()
      },
    )
  }
  return {
    push(item) {
      if (waiting.length + inFlight >= o.maxQueued) return false
      waiting.push(item)
      next()
      return true
    },
    get queued() {
      return waiting.length + inFlight
    },
  }
}
