import { describe, expect, it } from 'vitest'
import { FairQueue } from '../../../src/infra/store/fair-queue'

/** The queue of reads waiting for one of the node's readers (fair-queue.ts). */

const read = (community: string, n: number) => ({ community, n })

describe('the fair queue of reads waiting for a reader', () => {
  it("gives a freed reader to the waiting community holding the fewest, whatever the other's queue", () => {
    const q = new FairQueue<{ community: string; n: number }>()
    for (let n = 0; n < 5; n++) q.push(read('a', n))
    q.push(read('b', 0))
    const held = new Map([['a', 2]])
    expect(q.shift((c) => held.get(c) ?? 0)).toEqual(read('b', 0))
    expect(q.shift((c) => held.get(c) ?? 0)).toEqual(read('a', 0))
    expect(q.length).toBe(4)
  })

  it('serves communities holding as many in turn, each oldest first', () => {
    const q = new FairQueue<{ community: string; n: number }>()
    for (let n = 0; n < 3; n++) q.push(read('a', n))
    for (let n = 0; n < 2; n++) q.push(read('b', n))
    const order = Array.from({ length: 5 }, () => q.shift(() => 0))
    expect(order).toEqual([read('a', 0), read('b', 0), read('a', 1), read('b', 1), read('a', 2)])
    expect(q.shift(() => 0)).toBeUndefined()
  })

  it("counts each community's waiting items apart", () => {
    const q = new FairQueue<{ community: string; n: number }>()
    for (let n = 0; n < 3; n++) q.push(read('a', n))
    q.push(read('b', 0))
    expect([q.lengthOf('a'), q.lengthOf('b'), q.lengthOf('c'), q.length]).toEqual([3, 1, 0, 4])
    q.shift(() => 0)
    expect([q.lengthOf('a'), q.lengthOf('b')]).toEqual([2, 1])
  })

  it('forgets a read removed while waiting, and drains the rest', () => {
    const q = new FairQueue<{ community: string; n: number }>()
    const gone = read('a', 0)
    q.push(gone)
    q.push(read('b', 0))
    expect(q.remove(gone)).toBe(true)
    expect(q.remove(gone)).toBe(false)
    expect(q.drain()).toEqual([read('b', 0)])
    expect(q.length).toBe(0)
  })
})
