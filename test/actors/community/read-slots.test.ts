import { describe, expect, it } from 'vitest'
import { ReadSlots } from '../../../src/actors/community/read-slots'

/** A read the test settles by hand, recording when it started. */
function gatedRead(started: string[], name: string) {
  let settle!: () => void
  const done = new Promise<void>((resolve) => {
    settle = resolve
  })
  return {
    read: () => {
      started.push(name)
      return done
    },
    settle,
  }
}

const flush = () => new Promise<void>((resolve) => setImmediate(resolve))

describe('the read places of a community', () => {
  it('lets another connection read at once while one connection waits behind its own share', async () => {
    const slots = new ReadSlots(16, 4, 50)
    const started: string[] = []
    const burst = Array.from({ length: 10 }, (_, i) => gatedRead(started, `flood-${i}`))
    for (const b of burst) void slots.take('flood')!.run(b.read)
    const other = gatedRead(started, 'other')
    void slots.take('other')!.run(other.read)
    await flush()
    expect(started).toEqual(['flood-0', 'flood-1', 'flood-2', 'flood-3', 'other'])
    // one of its reads settles: the flood's next read takes the place it freed, in order
    burst[0]!.settle()
    await flush()
    expect(started.at(-1)).toBe('flood-4')
    expect(started).toHaveLength(6)
  })

  it('gives a freed place to the waiting connection holding the fewest, oldest first among equals', async () => {
    const slots = new ReadSlots(2, 2, 50)
    const started: string[] = []
    const a = Array.from({ length: 3 }, (_, i) => gatedRead(started, `a-${i}`))
    for (const r of a) void slots.take('a')!.run(r.read)
    const b = gatedRead(started, 'b-0')
    void slots.take('b')!.run(b.read)
    await flush()
    expect(started).toEqual(['a-0', 'a-1'])
    // a frees a place: b holds none and a one, so b goes first although a's read waited longer
    a[0]!.settle()
    await flush()
    expect(started).toEqual(['a-0', 'a-1', 'b-0'])
    b.settle()
    await flush()
    expect(started).toEqual(['a-0', 'a-1', 'b-0', 'a-2'])
  })

  it('never runs more than its places, and lets any number of connections wait with a read each', async () => {
    const slots = new ReadSlots(3, 3, 1)
    const started: string[] = []
    const reads = Array.from({ length: 2_000 }, (_, i) => gatedRead(started, `r-${i}`))
    for (const [i, r] of reads.entries()) void slots.take(`c-${i}`)!.run(r.read)
    await flush()
    expect(started).toEqual(['r-0', 'r-1', 'r-2'])
    reads[0]!.settle()
    await flush()
    expect(started.at(-1)).toBe('r-3')
    expect(started).toHaveLength(4)
  })

  it("refuses a connection's read once as many of its reads wait as its bound, at the bound and one past it, and no other connection's", async () => {
    const slots = new ReadSlots(1, 1, 2)
    const started: string[] = []
    const running = gatedRead(started, 'a-0')
    void slots.take('a')!.run(running.read)
    // the place is taken: a's next reads wait, two of them (its bound), and the third is refused
    const waiting = [gatedRead(started, 'a-1'), gatedRead(started, 'a-2')]
    for (const w of waiting) void slots.take('a')!.run(w.read)
    expect(slots.take('a')).toBeUndefined()
    // another connection still waits: the bound is a's own
    const other = gatedRead(started, 'b-0')
    void slots.take('b')!.run(other.read)
    await flush()
    expect(started).toEqual(['a-0'])
    // a's running read settles and its oldest waiting one starts: a has room to wait for one more again
    running.settle()
    await flush()
    expect(started).toEqual(['a-0', 'a-1'])
    const again = gatedRead(started, 'a-3')
    void slots.take('a')!.run(again.read)
    expect(slots.take('a')).toBeUndefined()
  })

  it('serves a storm of 20,000 connections with a read each in arrival order, cheaply, past one holding its whole share', async () => {
    const slots = new ReadSlots(16, 4, 50)
    const started: string[] = []
    // a socket at its share, with reads waiting, first in line: every pick passes over it
    const flood = Array.from({ length: 10 }, (_, i) => gatedRead(started, `flood-${i}`))
    for (const f of flood) void slots.take('flood')!.run(f.read)
    const n = 20_000
    const reads = Array.from({ length: n }, (_, i) => slots.take(`c-${i}`)!.run(async () => void started.push(`c-${i}`)))
    await Promise.all(reads)
    expect(started.slice(4)).toEqual(Array.from({ length: n }, (_, i) => `c-${i}`))
    // the flood's waiting reads are still behind its own share
    expect(started.slice(0, 4)).toEqual(['flood-0', 'flood-1', 'flood-2', 'flood-3'])
    flood[0]!.settle()
    await flush()
    expect(started.at(-1)).toBe('flood-4')
  })

  it('lets the waiting reads of a connection that left take their turn at once, so nobody waits behind them', async () => {
    const slots = new ReadSlots(1, 1, 50)
    const started: string[] = []
    const holder = gatedRead(started, 'holder')
    void slots.take('holder')!.run(holder.read)
    const gone = Array.from({ length: 3 }, (_, i) => gatedRead(started, `gone-${i}`))
    const goneReads = gone.map((g) => slots.take('gone')!.run(g.read))
    const next = gatedRead(started, 'next')
    void slots.take('next')!.run(next.read)
    await flush()
    expect(started).toEqual(['holder'])
    // the connection leaves: its turns come at once, and their callers end them without reading
    slots.forget('gone')
    await flush()
    expect(started).toEqual(['holder', 'gone-0', 'gone-1', 'gone-2'])
    for (const g of gone) g.settle()
    await Promise.all(goneReads)
    // the place the holder frees goes to the next connection in line, not to the one that left
    holder.settle()
    await flush()
    expect(started.at(-1)).toBe('next')
    // forgetting a connection with nothing waiting changes nothing
    slots.forget('nobody')
    expect(slots.take('another')).toBeDefined()
  })

  it('frees the place of a read that fails', async () => {
    const slots = new ReadSlots(1, 1, 10)
    await expect(slots.take('a')!.run(() => Promise.reject(new Error('store down')))).rejects.toThrow('store down')
    expect(await slots.take('a')!.run(async () => 'read')).toBe('read')
  })
})
