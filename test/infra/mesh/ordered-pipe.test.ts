import { describe, expect, it } from 'vitest'
import { createOrderedPipe } from '../../../src/infra/mesh/ordered-pipe'

/** A peer that answers each batch when the test says so. */
function slowPeer() {
  const batches: number[][] = []
  const answers: { resolve: () => void; reject: (e: Error) => void }[] = []
  const send = (batch: number[]) =>
    new Promise<void>((resolve, reject) => {
      batches.push(batch)
      answers.push({ resolve, reject })
    })
  return { batches, answers, send }
}

/** items are numbers, each as many bytes as its value; byte bounds far away unless a test sets them */
const LIMITS = { sizeOf: (n: number) => n, maxQueuedBytes: 1e9, maxBatchBytes: 1e9 }

describe('an ordered pipe to one peer', () => {
  it('sends one batch at a time, what waited meanwhile as the next, in the order it was pushed', async () => {
    const peer = slowPeer()
    const pipe = createOrderedPipe({ ...LIMITS, send: peer.send, maxQueued: 100, maxBatch: 3, dropped: () => {} })
    for (let i = 0; i < 7; i++) expect(pipe.push(i)).toBe(true)
    expect(peer.batches).toEqual([[0]])
    peer.answers[0]!.resolve()
    await Promise.resolve()
    expect(peer.batches).toEqual([[0], [1, 2, 3]])
    peer.answers[1]!.resolve()
    await Promise.resolve()
    peer.answers[2]!.resolve()
    await Promise.resolve()
    expect(peer.batches.flat()).toEqual([0, 1, 2, 3, 4, 5, 6])
    expect(pipe.queued).toBe(0)
  })

  it('refuses an item past maxQueued, counting what is in flight', () => {
    const peer = slowPeer()
    const pipe = createOrderedPipe({ ...LIMITS, send: peer.send, maxQueued: 3, maxBatch: 10, dropped: () => {} })
    expect([pipe.push(1), pipe.push(2), pipe.push(3), pipe.push(4)]).toEqual([true, true, true, false])
    expect(pipe.queued).toBe(3)
  })

  it('counts a batch the peer did not take as dropped and goes on with the next, never resending it out of order', async () => {
    const peer = slowPeer()
    const dropped: number[] = []
    const pipe = createOrderedPipe({ ...LIMITS, send: peer.send, maxQueued: 10, maxBatch: 10, dropped: (n) => dropped.push(n) })
    pipe.push(1)
    pipe.push(2)
    pipe.push(3)
    peer.answers[0]!.reject(new Error('tunnel closed'))
    await Promise.resolve()
    await Promise.resolve()
    expect(dropped).toEqual([1])
    expect(peer.batches).toEqual([[1], [2, 3]])
  })

  it('cuts a batch by bytes (one item at least) and refuses an item past maxQueuedBytes', async () => {
    const peer = slowPeer()
    const pipe = createOrderedPipe({
      ...LIMITS,
      send: peer.send,
      maxQueued: 100,
      maxBatch: 100,
      maxBatchBytes: 10,
      maxQueuedBytes: 40,
      dropped: () => {},
    })
    expect([pipe.push(30), pipe.push(4), pipe.push(4), pipe.push(4), pipe.push(5)]).toEqual([true, true, true, false, false])
    peer.answers[0]!.resolve()
    await Promise.resolve()
    expect(peer.batches).toEqual([[30], [4, 4]])
  })

  it('resolves flushed() once everything pushed before it was taken or dropped, not before', async () => {
    const peer = slowPeer()
    const pipe = createOrderedPipe({ ...LIMITS, send: peer.send, maxQueued: 100, maxBatch: 100, dropped: () => {} })
    await pipe.flushed()
    pipe.push(1)
    pipe.push(2)
    let flushed = false
    void pipe.flushed().then(() => {
      flushed = true
    })
    pipe.push(3)
    peer.answers[0]!.resolve()
    await new Promise((r) => setImmediate(r))
    expect(flushed).toBe(false)
    peer.answers[1]!.reject(new Error('tunnel closed'))
    await new Promise((r) => setImmediate(r))
    expect(flushed).toBe(true)
  })
})
