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
    const slots = new ReadSlots(16, 1_000, 4)
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
    const slots = new ReadSlots(2, 1_000, 2)
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

  it('never runs more than its places, and refuses a read once as many wait as it holds room for', async () => {
    const slots = new ReadSlots(3, 2, 3)
    const started: string[] = []
    const reads = Array.from({ length: 5 }, (_, i) => gatedRead(started, `r-${i}`))
    for (const [i, r] of reads.entries()) void slots.take(`c-${i}`)!.run(r.read)
    await flush()
    expect(started).toHaveLength(3)
    expect(slots.take('late')).toBeUndefined()
    reads[0]!.settle()
    await flush()
    expect(started).toHaveLength(4)
    expect(slots.take('late')).toBeDefined()
  })

  it('frees the place of a read that fails', async () => {
    const slots = new ReadSlots(1, 10, 1)
    await expect(slots.take('a')!.run(() => Promise.reject(new Error('store down')))).rejects.toThrow('store down')
    expect(await slots.take('a')!.run(async () => 'read')).toBe('read')
  })
})
