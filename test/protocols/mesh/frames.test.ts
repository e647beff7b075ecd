import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  encodeFrame,
  encodeJsonPayload,
  FRAME_HEADER_BYTES,
  FrameType,
  MAX_FRAME_PAYLOAD_BYTES,
  MESH_PROTOCOL_VERSION,
  type MeshFrame,
  parseFrame,
  parseJsonPayload,
} from '../../../src/protocols/mesh/frames'
import { prefixOf } from '../../../src/protocols/reasons'

const frame = (over: Partial<MeshFrame> = {}): MeshFrame => ({
  type: FrameType.Gossip,
  more: false,
  streamId: 7,
  requestId: 0,
  payload: new Uint8Array([1, 2, 3]),
  ...over,
})

/** A valid encoded frame with one header byte replaced, so only the check for that byte can refuse it. */
const withByte = (offset: number, value: number, f = frame()) => {
  const bytes = encodeFrame(f)
  bytes[offset] = value
  return bytes
}

/** A valid encoded frame whose u32 length field says `length` while the payload stays as it was. */
const withLengthField = (length: number, f = frame()) => {
  const bytes = encodeFrame(f)
  new DataView(bytes.buffer).setUint32(12, length)
  return bytes
}

const arbFrame: fc.Arbitrary<MeshFrame> = fc.record({
  type: fc.constantFrom(...Object.values(FrameType)),
  more: fc.boolean(),
  streamId: fc.integer({ min: 0, max: 0xffff_ffff }),
  requestId: fc.integer({ min: 0, max: 0xffff_ffff }),
  payload: fc.uint8Array({ maxLength: 300 }),
})

describe('mesh frame encoding', () => {
  it('lays out the 16-byte header exactly as docs/mesh.md specifies, big-endian', () => {
    const bytes = encodeFrame({
      type: FrameType.Response,
      more: true,
      streamId: 0x01020304,
      requestId: 0xa0b0c0d0,
      payload: new Uint8Array([0xee, 0xff]),
    })
    expect([...bytes]).toEqual([2, 7, 1, 0, 0x01, 0x02, 0x03, 0x04, 0xa0, 0xb0, 0xc0, 0xd0, 0, 0, 0, 2, 0xee, 0xff])
    expect(MESH_PROTOCOL_VERSION).toBe(2)
  })

  it('numbers the frame types as the wire format fixes them', () => {
    expect(FrameType).toEqual({
      Hello: 1,
      HelloProof: 2,
      Gossip: 3,
      Ping: 4,
      Pong: 5,
      Request: 6,
      Response: 7,
      Cancel: 8,
      Credit: 9,
      Goodbye: 10,
      Error: 11,
    })
  })

  for (const [name, type] of Object.entries(FrameType)) {
    it(`round-trips a ${name} frame`, () => {
      const f = frame({ type, streamId: type === FrameType.Request ? 3 : 0, requestId: type, more: type % 2 === 0 })
      expect(parseFrame(encodeFrame(f))).toEqual({ ok: true, value: f })
    })
  }

  it('round-trips every frame it can encode (property)', () => {
    fc.assert(
      fc.property(arbFrame, (f) => {
        expect(parseFrame(encodeFrame(f))).toEqual({ ok: true, value: f })
      }),
    )
  })

  it('round-trips the largest ids, u32 max', () => {
    const f = frame({ streamId: 0xffff_ffff, requestId: 0xffff_ffff })
    expect(parseFrame(encodeFrame(f))).toEqual({ ok: true, value: f })
  })

  it('carries a payload of exactly 1 MiB and refuses to encode one byte more', () => {
    const payload = new Uint8Array(MAX_FRAME_PAYLOAD_BYTES).fill(0x5a)
    const parsed = parseFrame(encodeFrame(frame({ payload })))
    expect(parsed.ok && parsed.value.payload).toEqual(payload)
    expect(() => encodeFrame(frame({ payload: new Uint8Array(MAX_FRAME_PAYLOAD_BYTES + 1) }))).toThrow(RangeError)
  })

  const badIds: [string, number][] = [
    ['negative', -1],
    ['2^32', 2 ** 32],
    ['fractional', 1.5],
    ['NaN', Number.NaN],
  ]
  for (const [what, id] of badIds) {
    it(`throws RangeError for a ${what} streamId or requestId our code built`, () => {
      expect(() => encodeFrame(frame({ streamId: id }))).toThrow(RangeError)
      expect(() => encodeFrame(frame({ requestId: id }))).toThrow(RangeError)
    })
  }

  it('throws RangeError for a frame type outside the enumeration', () => {
    expect(() => encodeFrame(frame({ type: 12 as FrameType }))).toThrow(RangeError)
  })
})

describe('mesh frame parsing', () => {
  it('reads a frame that sits at an offset inside a larger buffer, as Node Buffers often do', () => {
    const f = frame({ streamId: 0x01020304, requestId: 9 })
    const encoded = encodeFrame(f)
    const pool = new Uint8Array(encoded.byteLength + 13).fill(0xff)
    pool.set(encoded, 5)
    expect(parseFrame(pool.subarray(5, 5 + encoded.byteLength))).toEqual({ ok: true, value: f })
  })

  it('accepts a declared length of exactly 1 MiB', () => {
    const parsed = parseFrame(encodeFrame(frame({ payload: new Uint8Array(MAX_FRAME_PAYLOAD_BYTES) })))
    expect(parsed.ok && parsed.value.payload.byteLength).toBe(MAX_FRAME_PAYLOAD_BYTES)
  })

  const overLimit = () => {
    const bytes = new Uint8Array(FRAME_HEADER_BYTES + MAX_FRAME_PAYLOAD_BYTES + 1)
    bytes.set(encodeFrame(frame({ payload: new Uint8Array() })))
    new DataView(bytes.buffer).setUint32(12, MAX_FRAME_PAYLOAD_BYTES + 1)
    return bytes
  }

  const refusals: [string, () => Uint8Array][] = [
    ['an empty message', () => new Uint8Array()],
    [
      'a message one byte shorter than the header',
      () => encodeFrame(frame({ payload: new Uint8Array() })).subarray(0, FRAME_HEADER_BYTES - 1),
    ],
    ['version 0', () => withByte(0, 0)],
    ['version 1, whose frames after the Hello were not sealed', () => withByte(0, 1)],
    ['version 3', () => withByte(0, 3)],
    ['frame type 0', () => withByte(1, 0)],
    ['frame type 12, one past Error', () => withByte(1, 12)],
    ['flag bit 1 set', () => withByte(2, 0b10)],
    ['MORE plus the top flag bit', () => withByte(2, 0x81)],
    ['a non-zero reserved byte', () => withByte(3, 1)],
    ['a declared and carried payload of 1 MiB + 1', overLimit],
    ['a declared length one byte longer than the payload', () => withLengthField(4)],
    ['a declared length one byte shorter than the payload', () => withLengthField(2)],
    ['a declared length of u32 max on a short message', () => withLengthField(0xffff_ffff)],
  ]
  for (const [what, bytes] of refusals) {
    it(`refuses ${what} as invalid`, () => {
      const parsed = parseFrame(bytes())
      expect(parsed.ok).toBe(false)
      expect(!parsed.ok && prefixOf(parsed.error)).toBe('invalid')
    })
  }

  it('refuses a message with a trailing byte after the declared payload', () => {
    const encoded = encodeFrame(frame())
    const longer = new Uint8Array(encoded.byteLength + 1)
    longer.set(encoded)
    const parsed = parseFrame(longer)
    expect(!parsed.ok && prefixOf(parsed.error)).toBe('invalid')
  })

  it('never throws on arbitrary bytes, and accepts only what re-encodes to the same bytes (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        const parsed = parseFrame(bytes)
        if (parsed.ok) expect(encodeFrame(parsed.value)).toEqual(bytes)
        else expect(prefixOf(parsed.error)).toBe('invalid')
      }),
    )
  })

  it('never throws on valid frames with one byte corrupted (property)', () => {
    fc.assert(
      fc.property(arbFrame, fc.nat(), fc.integer({ min: 0, max: 255 }), (f, at, value) => {
        const bytes = encodeFrame(f)
        bytes[at % bytes.byteLength] = value
        const parsed = parseFrame(bytes)
        if (parsed.ok) expect(encodeFrame(parsed.value)).toEqual(bytes)
        else expect(prefixOf(parsed.error)).toBe('invalid')
      }),
    )
  })
})

describe('mesh JSON payloads', () => {
  it('round-trips a JSON value with multi-byte UTF-8 text', () => {
    const value = { kind: 'gossip', text: 'héllo 🐝 蜂', n: [1, 2.5, null, true] }
    expect(parseJsonPayload(encodeJsonPayload(value))).toEqual({ ok: true, value })
  })

  it('encodes as UTF-8 JSON text', () => {
    expect(new TextDecoder().decode(encodeJsonPayload({ a: 'é' }))).toBe('{"a":"é"}')
  })

  it('round-trips any JSON value (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(parseJsonPayload(encodeJsonPayload(value))).toEqual({ ok: true, value: JSON.parse(JSON.stringify(value)) })
      }),
    )
  })

  const refusals: [string, Uint8Array][] = [
    ['invalid UTF-8 (a lone 0xff byte)', new Uint8Array([0x22, 0xff, 0x22])],
    ['a truncated multi-byte sequence', new Uint8Array([0x22, 0xe8, 0x9c, 0x22])],
    ['an empty payload', new Uint8Array()],
    ['text that is not JSON', new TextEncoder().encode('{"a":')],
  ]
  for (const [what, bytes] of refusals) {
    it(`refuses ${what} as invalid`, () => {
      const parsed = parseJsonPayload(bytes)
      expect(!parsed.ok && prefixOf(parsed.error)).toBe('invalid')
    })
  }

  it('throws for a value JSON cannot carry, which only our code can build', () => {
    expect(() => encodeJsonPayload(undefined)).toThrow(TypeError)
    expect(() => encodeJsonPayload(10n)).toThrow(TypeError)
  })
})
