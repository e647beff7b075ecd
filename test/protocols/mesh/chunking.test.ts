import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  createReassembler,
  MAX_BODY_BYTES,
  MAX_BUFFERED_BYTES,
  MAX_CHUNKS_PER_BODY,
  MAX_PARTIAL_BODIES,
  toChunks,
} from '../../../src/protocols/mesh/chunking'
import { encodeFrame, FrameType, MAX_FRAME_PAYLOAD_BYTES, type MeshFrame, parseFrame } from '../../../src/protocols/mesh/frames'
import { prefixOf } from '../../../src/protocols/reasons'

const MiB = MAX_FRAME_PAYLOAD_BYTES
const header = { type: FrameType.Response, streamId: 5, requestId: 42 }

/** Deterministic non-constant bytes, so a misplaced or reordered chunk shows up as a different body. */
function bodyOf(length: number, seed = 1): Uint8Array {
  const body = new Uint8Array(length)
  let x = seed | 1
  for (let i = 0; i < length; i++) {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    body[i] = x & 0xff
  }
  return body
}

const chunk = (more: boolean, bytes: number, over: Partial<MeshFrame> = {}): MeshFrame => ({
  ...header,
  more,
  payload: new Uint8Array(bytes).fill(7),
  ...over,
})

// Buffer.equals, not toEqual: a deep equal walks 16 Mi elements one by one
const sameBytes = (a: Uint8Array | undefined, b: Uint8Array) =>
  a !== undefined && Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b)

const isInvalid = (r: { ok: boolean; error?: string }) => !r.ok && prefixOf(r.error ?? '') === 'invalid'

describe('splitting a body into frames', () => {
  const cases: [string, number, number[]][] = [
    ['an empty body into one empty frame', 0, [0]],
    ['a 1-byte body into one frame', 1, [1]],
    ['a body of exactly 1 MiB into one frame', MiB, [MiB]],
    ['a body of 1 MiB + 1 into two frames', MiB + 1, [MiB, 1]],
    ['a body of 3 MiB into three full frames', 3 * MiB, [MiB, MiB, MiB]],
    ['a body of exactly 16 MiB into sixteen frames', MAX_BODY_BYTES, Array(16).fill(MiB)],
  ]
  for (const [what, length, sizes] of cases) {
    it(`splits ${what}, MORE on all but the last`, () => {
      const body = bodyOf(length)
      const frames = toChunks(header, body)
      expect(frames.map((f) => f.payload.byteLength)).toEqual(sizes)
      expect(frames.map((f) => f.more)).toEqual(sizes.map((_, i) => i < sizes.length - 1))
      expect(frames.every((f) => f.type === header.type && f.streamId === header.streamId && f.requestId === header.requestId)).toBe(true)
    })
  }

  it('throws RangeError for a body of 16 MiB + 1, which our code must never build', () => {
    expect(() => toChunks(header, new Uint8Array(MAX_BODY_BYTES + 1))).toThrow(RangeError)
  })
})

describe('reassembling a body', () => {
  it('completes a single-frame body at once, as a copy the caller can keep', () => {
    const r = createReassembler()
    const payload = new Uint8Array([1, 2, 3])
    const result = r.accept(chunk(false, 0, { payload }))
    payload.fill(0)
    expect(result).toEqual({ ok: true, value: { complete: true, ...header, body: new Uint8Array([1, 2, 3]) } })
  })

  it('holds chunks until the last and reports the bytes it holds', () => {
    const r = createReassembler()
    expect(r.accept(chunk(true, 10))).toEqual({ ok: true, value: { complete: false } })
    expect(r.accept(chunk(true, 20))).toEqual({ ok: true, value: { complete: false } })
    expect(r.bufferedBytes).toBe(30)
    const last = r.accept(chunk(false, 5))
    expect(last.ok && last.value.complete && last.value.body.byteLength).toBe(35)
    expect([r.bufferedBytes, r.partialBodies]).toEqual([0, 0])
  })

  it('keeps bodies apart by stream and by request, however their chunks interleave', () => {
    const r = createReassembler()
    const keys = [
      { streamId: 1, requestId: 1 },
      { streamId: 1, requestId: 2 },
      { streamId: 2, requestId: 1 },
    ]
    for (const [i, k] of keys.entries()) r.accept(chunk(true, 1, { ...k, payload: new Uint8Array([i]) }))
    const done = keys.map((k, i) => r.accept(chunk(false, 1, { ...k, payload: new Uint8Array([10 + i]) })))
    expect(done.map((d) => d.ok && d.value.complete && [...d.value.body])).toEqual([
      [0, 10],
      [1, 11],
      [2, 12],
    ])
  })

  it('reassembles a body of exactly 16 MiB', () => {
    const body = bodyOf(MAX_BODY_BYTES, 3)
    const r = createReassembler()
    const results = toChunks(header, body).map((f) => r.accept(f))
    const last = results.at(-1)
    expect(last?.ok && last.value.complete && sameBytes(last.value.body, body)).toBe(true)
    expect(r.bufferedBytes).toBe(0)
  })

  it('refuses a body of 16 MiB + 1 as invalid and releases what it held of it', () => {
    const r = createReassembler()
    for (const f of toChunks(header, new Uint8Array(MAX_BODY_BYTES))) r.accept({ ...f, more: true })
    expect(r.bufferedBytes).toBe(MAX_BODY_BYTES)
    expect(isInvalid(r.accept(chunk(false, 1)))).toBe(true)
    expect([r.bufferedBytes, r.partialBodies]).toEqual([0, 0])
  })

  it('refuses a first chunk larger than a configured maximum body', () => {
    const r = createReassembler({ maxBodyBytes: 4 })
    expect(r.accept(chunk(false, 4)).ok).toBe(true)
    expect(isInvalid(r.accept(chunk(false, 5)))).toBe(true)
    expect(isInvalid(r.accept(chunk(true, 5)))).toBe(true)
    expect(r.bufferedBytes).toBe(0)
  })

  it('refuses a continuation whose frame type differs from the first chunk and drops the body', () => {
    const r = createReassembler()
    r.accept(chunk(true, 8))
    expect(isInvalid(r.accept(chunk(false, 1, { type: FrameType.Gossip })))).toBe(true)
    expect([r.bufferedBytes, r.partialBodies]).toEqual([0, 0])
  })

  it(`holds ${MAX_PARTIAL_BODIES} bodies in progress at once and refuses one more`, () => {
    const r = createReassembler()
    for (let i = 0; i < MAX_PARTIAL_BODIES; i++) expect(r.accept(chunk(true, 1, { requestId: i })).ok).toBe(true)
    expect(isInvalid(r.accept(chunk(true, 1, { requestId: MAX_PARTIAL_BODIES })))).toBe(true)
    expect([r.partialBodies, r.bufferedBytes]).toEqual([MAX_PARTIAL_BODIES, MAX_PARTIAL_BODIES])
    // single-frame bodies and continuations need no new slot
    expect(r.accept(chunk(false, 1, { requestId: 1000 })).ok).toBe(true)
    expect(r.accept(chunk(false, 1, { requestId: 0 })).ok).toBe(true)
    expect(r.accept(chunk(true, 1, { requestId: MAX_PARTIAL_BODIES })).ok).toBe(true)
  })

  it(`holds at most ${MAX_BUFFERED_BYTES / MiB} MiB of unfinished bodies in all, and refuses the chunk past it`, () => {
    expect(MAX_BUFFERED_BYTES).toBe(4 * MAX_BODY_BYTES)
    const r = createReassembler({ maxBufferedBytes: 10 })
    for (let i = 0; i < 3; i++) expect(r.accept(chunk(true, 3, { requestId: i })).ok).toBe(true)
    expect(r.accept(chunk(true, 1, { requestId: 0 })).ok).toBe(true) // exactly 10 held
    expect(r.bufferedBytes).toBe(10)
    expect(isInvalid(r.accept(chunk(true, 1, { requestId: 1 })))).toBe(true) // 11: refused, body 1 dropped
    expect(isInvalid(r.accept(chunk(true, 4, { requestId: 9 })))).toBe(true) // 7 + 4: refused too
    expect([r.partialBodies, r.bufferedBytes]).toEqual([2, 7])
    // a last chunk completes its body and frees its bytes, so it is taken even at the limit
    const done = r.accept(chunk(false, 5, { requestId: 0 }))
    expect(done.ok && done.value.complete && done.value.body.byteLength).toBe(9)
    expect(r.bufferedBytes).toBe(3)
  })

  it(`takes a body in ${MAX_CHUNKS_PER_BODY} chunks and refuses the chunk after, so tiny chunks cannot pile up`, () => {
    const r = createReassembler()
    for (let i = 0; i < MAX_CHUNKS_PER_BODY - 1; i++) r.accept(chunk(true, 1))
    const last = r.accept(chunk(false, 1))
    expect(last.ok && last.value.complete && last.value.body.byteLength).toBe(MAX_CHUNKS_PER_BODY)
    for (let i = 0; i < MAX_CHUNKS_PER_BODY; i++) r.accept(chunk(true, 1))
    expect(isInvalid(r.accept(chunk(false, 1)))).toBe(true)
    expect(r.bufferedBytes).toBe(0)
  })

  it('drops a partial body on abort and reports whether there was one', () => {
    const r = createReassembler()
    r.accept(chunk(true, 100))
    r.accept(chunk(true, 50, { requestId: 43 }))
    expect(r.abort(header.streamId, header.requestId)).toBe(true)
    expect([r.bufferedBytes, r.partialBodies]).toEqual([50, 1])
    expect(r.abort(header.streamId, header.requestId)).toBe(false)
    const fresh = r.accept(chunk(false, 0, { payload: new Uint8Array([9]) }))
    expect(fresh.ok && fresh.value.complete && [...fresh.value.body]).toEqual([9])
  })

  it('returns a multi-chunk body that stays intact when the chunks given to it are overwritten', () => {
    const r = createReassembler()
    const body = bodyOf(MiB + 10, 5)
    const frames = toChunks(header, body.slice())
    const last = frames.map((f) => r.accept(f)).at(-1)
    for (const f of frames) f.payload.fill(0)
    expect(last?.ok && last.value.complete && sameBytes(last.value.body, body)).toBe(true)
  })

  it('gives back every body sent through the wire, chunks of several bodies interleaved (property)', () => {
    const arbBodies = fc.array(
      fc.record({
        length: fc.oneof(fc.constantFrom(0, 1, MiB - 1, MiB, MiB + 1, 2 * MiB), fc.integer({ min: 0, max: 3 * MiB })),
        seed: fc.integer(),
      }),
      { minLength: 1, maxLength: 3 },
    )
    fc.assert(
      fc.property(arbBodies, fc.array(fc.nat(), { maxLength: 20 }), (specs, picks) => {
        const bodies = specs.map((s) => bodyOf(s.length, s.seed))
        const queues = bodies.map((b, i) => toChunks({ type: FrameType.Request, streamId: 1, requestId: i + 1 }, b).map(encodeFrame))
        const r = createReassembler()
        const received = new Map<number, Uint8Array>()
        let p = 0
        while (queues.some((q) => q.length > 0)) {
          const live = queues.filter((q) => q.length > 0)
          const bytes = live[(picks[p++] ?? 0) % live.length]!.shift()!
          const frame = parseFrame(bytes)
          if (!frame.ok) throw new Error(frame.error)
          const step = r.accept(frame.value)
          if (!step.ok) throw new Error(step.error)
          if (step.value.complete) received.set(step.value.requestId, step.value.body)
        }
        expect(bodies.map((b, i) => sameBytes(received.get(i + 1), b))).toEqual(bodies.map(() => true))
        expect(r.bufferedBytes).toBe(0)
      }),
      { numRuns: 8 },
    )
  })
})
