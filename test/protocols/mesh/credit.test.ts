import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  CREDIT_PAYLOAD_BYTES,
  createReceiveWindow,
  createSendWindow,
  encodeCredit,
  INITIAL_STREAM_CREDIT_BYTES,
  MAX_WINDOW_BYTES,
  parseCredit,
} from '../../../src/protocols/mesh/credit'
import { MAX_FRAME_PAYLOAD_BYTES } from '../../../src/protocols/mesh/frames'
import { prefixOf } from '../../../src/protocols/reasons'

const isInvalid = (r: { ok: boolean; error?: string }) => !r.ok && prefixOf(r.error ?? '') === 'invalid'

describe('sending within credit', () => {
  it('starts each stream with 4 MiB of credit', () => {
    expect(INITIAL_STREAM_CREDIT_BYTES).toBe(4 * 1_048_576)
    expect(createSendWindow().available).toBe(INITIAL_STREAM_CREDIT_BYTES)
  })

  it('lets a sender spend its credit exactly to zero, and not one byte more', () => {
    const w = createSendWindow(100)
    expect([w.canSend(100), w.canSend(101)]).toEqual([true, false])
    w.consume(60)
    expect([w.available, w.canSend(40), w.canSend(41)]).toEqual([40, true, false])
    expect(() => w.consume(41)).toThrow(RangeError)
    w.consume(40)
    expect([w.available, w.canSend(0), w.canSend(1)]).toEqual([0, true, false])
  })

  it('reopens a window with a peer grant', () => {
    const w = createSendWindow(10)
    w.consume(10)
    expect(w.grant(25)).toEqual({ ok: true, value: undefined })
    expect([w.available, w.canSend(25), w.canSend(26)]).toEqual([25, true, false])
  })

  it('accepts a grant that fills the window to exactly 64 MiB and refuses one byte more', () => {
    const w = createSendWindow(100)
    expect(w.grant(MAX_WINDOW_BYTES - 100).ok).toBe(true)
    expect(w.available).toBe(MAX_WINDOW_BYTES)
    expect(isInvalid(w.grant(1))).toBe(true)
    expect(w.available).toBe(MAX_WINDOW_BYTES)
  })

  const badGrants: [string, number][] = [
    ['zero', 0],
    ['negative', -5],
    ['fractional', 1.5],
    ['NaN', Number.NaN],
  ]
  for (const [what, bytes] of badGrants) {
    it(`refuses a ${what} grant as invalid and leaves the window unchanged`, () => {
      const w = createSendWindow(10)
      expect(isInvalid(w.grant(bytes))).toBe(true)
      expect(w.available).toBe(10)
    })
  }

  it('throws RangeError for a window size our config got wrong', () => {
    expect(() => createSendWindow(-1)).toThrow(RangeError)
    expect(() => createSendWindow(MAX_WINDOW_BYTES + 1)).toThrow(RangeError)
    expect(createSendWindow(MAX_WINDOW_BYTES).available).toBe(MAX_WINDOW_BYTES)
  })
})

describe('receiving within credit', () => {
  it('takes a peer using its credit exactly and refuses one byte over as invalid', () => {
    const w = createReceiveWindow(100)
    expect(w.receive(60).ok).toBe(true)
    expect(w.receive(40).ok).toBe(true)
    expect(isInvalid(w.receive(1))).toBe(true)
    expect([w.peerCreditBytes, w.unprocessedBytes]).toEqual([0, 100])
  })

  it('refuses a single payload larger than the credit left, without counting it', () => {
    const w = createReceiveWindow(100)
    w.receive(99)
    expect(isInvalid(w.receive(2))).toBe(true)
    expect([w.peerCreditBytes, w.unprocessedBytes]).toEqual([1, 99])
  })

  it('batches grants: none until half the window is processed, then all processed bytes at once', () => {
    const w = createReceiveWindow(100)
    w.receive(100)
    expect(w.consumed(30)).toBe(0)
    expect(w.consumed(19)).toBe(0)
    expect(w.consumed(1)).toBe(50)
    expect(w.peerCreditBytes).toBe(50)
    expect(w.consumed(50)).toBe(50)
    expect([w.peerCreditBytes, w.unprocessedBytes]).toEqual([100, 0])
  })

  it('grants at a configured threshold and not one byte before', () => {
    const w = createReceiveWindow(100, { grantThresholdBytes: 10 })
    w.receive(30)
    expect(w.consumed(9)).toBe(0)
    expect(w.consumed(1)).toBe(10)
    expect(w.consumed(20)).toBe(20)
  })

  it('lets a peer send again once credit is granted back', () => {
    const w = createReceiveWindow(10, { grantThresholdBytes: 1 })
    w.receive(10)
    expect(isInvalid(w.receive(1))).toBe(true)
    expect(w.consumed(4)).toBe(4)
    expect(w.receive(4).ok).toBe(true)
    expect(isInvalid(w.receive(1))).toBe(true)
  })

  it('throws RangeError when the application claims to have processed more than it received', () => {
    const w = createReceiveWindow(100)
    w.receive(10)
    expect(() => w.consumed(11)).toThrow(RangeError)
    expect(w.unprocessedBytes).toBe(10)
  })

  it('throws RangeError for a threshold outside 1..the window', () => {
    expect(() => createReceiveWindow(100, { grantThresholdBytes: 0 })).toThrow(RangeError)
    expect(() => createReceiveWindow(100, { grantThresholdBytes: 101 })).toThrow(RangeError)
    expect(createReceiveWindow(100, { grantThresholdBytes: 100 }).peerCreditBytes).toBe(100)
  })

  it('moves every frame of a stream without refusal or stall, whatever the frame sizes and processing pace (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: MAX_FRAME_PAYLOAD_BYTES }), { minLength: 1, maxLength: 40 }),
        fc.array(fc.integer({ min: 65_536, max: 2 * MAX_FRAME_PAYLOAD_BYTES }), { minLength: 1, maxLength: 40 }),
        (frames, paces) => {
          const send = createSendWindow()
          const receive = createReceiveWindow()
          const toSend = [...frames]
          let delivered = 0
          for (let step = 0; toSend.length > 0 || receive.unprocessedBytes > 0; step++) {
            while (toSend.length > 0 && send.canSend(toSend[0]!)) {
              const bytes = toSend.shift()!
              send.consume(bytes)
              expect(receive.receive(bytes)).toEqual({ ok: true, value: undefined })
              delivered += bytes
            }
            // the application processes at its own pace, some of what it holds each step
            const pace = paces[step % paces.length]!
            const grant = receive.consumed(Math.min(pace, receive.unprocessedBytes))
            if (grant > 0) {
              const parsed = parseCredit(encodeCredit(grant))
              expect(parsed.ok && send.grant(parsed.value)).toEqual({ ok: true, value: undefined })
            }
            const stalled = toSend.length > 0 && !send.canSend(toSend[0]!) && receive.unprocessedBytes === 0
            expect(stalled).toBe(false)
            expect(step).toBeLessThan(10_000)
          }
          expect(delivered).toBe(frames.reduce((a, b) => a + b, 0))
        },
      ),
      { numRuns: 50 },
    )
  })
})

describe('Credit frame payload', () => {
  it('is the grant as a 4-byte big-endian integer', () => {
    expect([...encodeCredit(0x01020304)]).toEqual([1, 2, 3, 4])
    expect(parseCredit(new Uint8Array([0, 0x40, 0, 0]))).toEqual({ ok: true, value: 4_194_304 })
  })

  it('round-trips grants from 1 byte to 64 MiB and throws RangeError past them', () => {
    for (const grant of [1, INITIAL_STREAM_CREDIT_BYTES, MAX_WINDOW_BYTES])
      expect(parseCredit(encodeCredit(grant))).toEqual({ ok: true, value: grant })
    expect(() => encodeCredit(0)).toThrow(RangeError)
    expect(() => encodeCredit(MAX_WINDOW_BYTES + 1)).toThrow(RangeError)
  })

  for (const length of [0, CREDIT_PAYLOAD_BYTES - 1, CREDIT_PAYLOAD_BYTES + 1]) {
    it(`refuses a ${length}-byte Credit payload as invalid`, () => {
      expect(isInvalid(parseCredit(new Uint8Array(length)))).toBe(true)
    })
  }

  it('reads a payload that sits at an offset inside a larger buffer', () => {
    const buffer = new Uint8Array([9, 9, 0, 0, 1, 0, 9])
    expect(parseCredit(buffer.subarray(2, 6))).toEqual({ ok: true, value: 256 })
  })
})
