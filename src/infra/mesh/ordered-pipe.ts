// An ordered stream of items to one peer over tunnel requests (docs/mesh.md §9): what waits goes as one batch,
// one batch in flight at a time, so the peer reads the items in the order they were pushed; each batch spends
// the tunnel's credit like any request body, so a peer that stops reading stops the stream. What the pipe
// holds is bounded: past it an item is refused at the push (the caller answers its sender), and a batch the
// peer did not take (the tunnel closed, a timeout) is dropped and counted, never sent out of order. What must
// follow the items on another path (a job's result on the bus after its chunks) waits for flushed().

export interface OrderedPipeOptions<T> {
  /** sends one batch; resolves once the peer took it */
  send(batch: T[]): Promise<void>
  /** an item's size in bytes, as it is sent */
  sizeOf(item: T): number
  /** items and bytes held at most (waiting and in flight) */
  maxQueued: number
  maxQueuedBytes: number
  /** items and bytes per batch at most (a batch always holds at least one item) */
  maxBatch: number
  maxBatchBytes: number
  /** a batch the peer did not take */
  dropped(count: number, error: unknown): void
}

export interface OrderedPipe<T> {
  /** false when the pipe is full: the item is not sent */
  push(item: T): boolean
  /** resolves once every item pushed so far was taken by the peer or dropped */
  flushed(): Promise<void>
  readonly queued: number
}

export function createOrderedPipe<T>(o: OrderedPipeOptions<T>): OrderedPipe<T> {
  const waiting: { item: T; bytes: number }[] = []
  let inFlight = 0
  let queuedBytes = 0
  // items pushed and settled (taken or dropped) so far, and who waits for a count to settle
  let pushed = 0
  let settledCount = 0
  const waiters: { at: number; resolve: () => void }[] = []
  const next = () => {
    if (inFlight > 0 || waiting.length === 0) return
    let n = 0
    let bytes = 0
    while (n < waiting.length && n < o.maxBatch && (n === 0 || bytes + waiting[n]!.bytes <= o.maxBatchBytes)) bytes += waiting[n++]!.bytes
    const batch = waiting.splice(0, n)
    inFlight = batch.length
    const settle = () => {
      inFlight = 0
      queuedBytes -= bytes
      settledCount += batch.length
      while (waiters[0] && waiters[0].at <= settledCount) waiters.shift()!.resolve()
    }
    o.send(batch.map((b) => b.item)).then(
      () => {
        settle()
        next()
      },
      (error: unknown) => {
        settle()
        o.dropped(batch.length, error)
        next()
      },
    )
  }
  return {
    push(item) {
      const bytes = o.sizeOf(item)
      if (waiting.length + inFlight >= o.maxQueued || queuedBytes + bytes > o.maxQueuedBytes) return false
      waiting.push({ item, bytes })
      queuedBytes += bytes
      pushed++
      next()
      return true
    },
    flushed() {
      if (settledCount >= pushed) return Promise.resolve()
      return new Promise((resolve) => waiters.push({ at: pushed, resolve }))
    },
    get queued() {
      return waiting.length + inFlight
    },
  }
}
