import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { FrameSequence } from '../../../src/actors/connection/frame-sequence'

interface Entry {
  name: string
  barrier: boolean
}

/** A sequence whose preparations are finished by the test, in whatever order it likes. */
function harness(maxInFlight: number) {
  const started: string[] = []
  const applied: string[] = []
  const seqOf = new Map<string, number>()
  const seq: FrameSequence<Entry, string> = new FrameSequence<Entry, string>(maxInFlight, {
    start: (n, e) => {
      seqOf.set(e.name, n)
      started.push(e.name)
    },
    apply: (_n, e, result) => applied.push(`${e.name}=${result}`),
  })
  return {
    started,
    applied,
    seq,
    arrive: (name: string, barrier = false) => seq.arrive({ name, barrier }),
    finish: (name: string, result = 'ok') => seq.prepared(seqOf.get(name)!, result),
  }
}

describe('the frame sequence of one connection', () => {
  it('applies in arrival order whatever order the preparations finish in', () => {
    const h = harness(10)
    for (const n of ['a', 'b', 'c']) h.arrive(n)
    h.finish('c')
    h.finish('b')
    expect(h.applied).toEqual([])
    h.finish('a')
    expect(h.applied).toEqual(['a=ok', 'b=ok', 'c=ok'])
  })

  it('starts nothing behind a barrier (AUTH) until the barrier is applied', () => {
    const h = harness(10)
    h.arrive('event-1')
    h.arrive('auth', true)
    h.arrive('event-2')
    expect(h.started).toEqual(['event-1', 'auth'])
    h.finish('auth', 'authed')
    expect(h.started).toEqual(['event-1', 'auth'])
    h.finish('event-1')
    expect(h.applied).toEqual(['event-1=ok', 'auth=authed'])
    expect(h.started).toEqual(['event-1', 'auth', 'event-2'])
    h.finish('event-2')
    expect(h.applied.at(-1)).toBe('event-2=ok')
  })

  it('keeps at most maxInFlight started and unapplied; the rest wait in order', () => {
    const h = harness(2)
    for (const n of ['a', 'b', 'c', 'd']) h.arrive(n)
    expect(h.started).toEqual(['a', 'b'])
    expect(h.seq.waiting).toBe(2)
    h.finish('b')
    expect(h.started).toEqual(['a', 'b'])
    h.finish('a')
    expect(h.started).toEqual(['a', 'b', 'c', 'd'])
    expect(h.seq.inFlight).toBe(2)
  })

  it('takes a preparation that finishes at once (synchronously, inside start)', () => {
    const applied: number[] = []
    const seq: FrameSequence<{ barrier: boolean }, number> = new FrameSequence<{ barrier: boolean }, number>(1, {
      start: (n) => seq.prepared(n, n * 10),
      apply: (_n, _e, r) => applied.push(r),
    })
    for (let i = 0; i < 5; i++) seq.arrive({ barrier: i === 2 })
    expect(applied).toEqual([0, 10, 20, 30, 40])
    expect(seq.inFlight).toBe(0)
  })

  it('ignores a result for a frame already applied, or never started', () => {
    const h = harness(1)
    h.arrive('a')
    h.arrive('b')
    h.finish('a')
    h.seq.prepared(0, 'again')
    h.seq.prepared(99, 'stray')
    expect(h.applied).toEqual(['a=ok'])
  })

  it('applies every frame exactly once, in arrival order, for any finishing order and barrier placement (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.boolean(), { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1, max: 8 }),
        fc.array(fc.nat(), { maxLength: 200 }),
        (barriers, maxInFlight, picks) => {
          const applied: number[] = []
          const open: number[] = []
          const seq = new FrameSequence<{ barrier: boolean; i: number }, number>(maxInFlight, {
            start: (n) => open.push(n),
            apply: (n, e, r) => {
              expect(r).toBe(n)
              applied.push(e.i)
            },
          })
          for (const [i, barrier] of barriers.entries()) seq.arrive({ barrier, i })
          let k = 0
          while (open.length > 0) {
            expect(seq.inFlight).toBeLessThanOrEqual(maxInFlight)
            const [n] = open.splice((picks[k++] ?? 0) % open.length, 1)
            seq.prepared(n!, n!)
          }
          expect(applied).toEqual(barriers.map((_, i) => i))
        },
      ),
      { seed: 42, numRuns: 300 },
    )
  })
})
