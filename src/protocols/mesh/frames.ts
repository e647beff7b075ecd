/**
 * The mesh tunnel's frame codec (docs/mesh.md): one binary WebSocket message is one frame, a fixed 16-byte
 * header then `length` payload bytes. Integers are big-endian (network order). Everything a peer sends goes
 * through `parseFrame`, which never throws; `encodeFrame` throws only for frames our own code built wrongly.
 *
 * Every header field is checked strictly (version, type, flag bits, reserved byte, exact length) so that a
 * later protocol version can give the spare bits meaning without an old node misreading them.
 */
import { reason } from '../reasons.js'
import { err, ok, type Result } from '../result.js'

/**
 * Any other version byte is refused: there is no negotiation below the frame layer. 2: every frame after the
 * Hello is sealed (infra/mesh/tunnel-seal.ts), so a node of version 1 is refused at its Hello, not mid-stream.
 */
export const MESH_PROTOCOL_VERSION = 2
export const FRAME_HEADER_BYTES = 16
/**
 * 1 MiB: large enough that per-frame overhead is negligible on a LAN link, small enough that one stream's
 * frame delays another stream's by at most ~1 ms at 10 Gbit/s. Bodies above this are chunked (chunking.ts).
 */
export const MAX_FRAME_PAYLOAD_BYTES = 1_048_576
const MAX_U32 = 0xffff_ffff

export const FrameType = {
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
} as const
export type FrameType = (typeof FrameType)[keyof typeof FrameType]

const FRAME_TYPES: ReadonlySet<number> = new Set(Object.values(FrameType))
export const isFrameType = (n: number): n is FrameType => FRAME_TYPES.has(n)

/** flags bit 0: another chunk of the same body follows. Every other bit must be 0. */
const FLAG_MORE = 0x01
/** streamId 0 carries the tunnel's own control traffic (Hello, Ping, Goodbye, ...). */
export const CONTROL_STREAM_ID = 0
/** requestId 0 means the frame answers no request. */
export const NO_REQUEST_ID = 0

export interface MeshFrame {
  type: FrameType
  /** another chunk of the same body follows (flags bit 0) */
  more: boolean
  /** u32; 0 is the control stream */
  streamId: number
  /** u32; correlates a Response/Cancel with its Request; 0 = none */
  requestId: number
  payload: Uint8Array
}

const isU32 = (n: number) => Number.isInteger(n) && n >= 0 && n <= MAX_U32

/** The frame as one WebSocket message. A fresh buffer: the payload is copied in after the header. */
export function encodeFrame(frame: MeshFrame): Uint8Array {
  if (!isFrameType(frame.type)) throw new RangeError(`unknown mesh frame type ${frame.type}`)
  if (!isU32(frame.streamId)) throw new RangeError(`mesh streamId ${frame.streamId} is not a u32`)
  if (!isU32(frame.requestId)) throw new RangeError(`mesh requestId ${frame.requestId} is not a u32`)
  const length = frame.payload.byteLength
  if (length > MAX_FRAME_PAYLOAD_BYTES) {
    throw new RangeError(`mesh frame payload of ${length} bytes exceeds ${MAX_FRAME_PAYLOAD_BYTES}; chunk the body`)
  }
  const bytes = new Uint8Array(FRAME_HEADER_BYTES + length)
  const view = new DataView(bytes.buffer)
  view.setUint8(0, MESH_PROTOCOL_VERSION)
  view.setUint8(1, frame.type)
  view.setUint8(2, frame.more ? FLAG_MORE : 0)
  view.setUint8(3, 0)
  view.setUint32(4, frame.streamId)
  view.setUint32(8, frame.requestId)
  view.setUint32(12, length)
  bytes.set(frame.payload, FRAME_HEADER_BYTES)
  return bytes
}

/**
 * A frame from one binary WebSocket message. The payload is a view into `bytes`, not a copy: a 1 MiB frame
 * should not be copied twice on the hot path. Whoever keeps a payload beyond the message's handling must copy
 * it (the reassembler does, so a finished body never aliases a receive buffer).
 */
export function parseFrame(bytes: Uint8Array): Result<MeshFrame> {
  if (bytes.byteLength < FRAME_HEADER_BYTES) return invalid(`mesh frame of ${bytes.byteLength} bytes is shorter than its header`)
  // byteOffset matters: a Node Buffer is often a slice of a larger pooled ArrayBuffer
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const version = view.getUint8(0)
  if (version !== MESH_PROTOCOL_VERSION) return invalid(`mesh protocol version ${version} is not ${MESH_PROTOCOL_VERSION}`)
  const type = view.getUint8(1)
  if (!isFrameType(type)) return invalid(`unknown mesh frame type ${type}`)
  const flags = view.getUint8(2)
  if ((flags & ~FLAG_MORE) !== 0) return invalid(`unknown mesh frame flag bits 0x${flags.toString(16)}`)
  if (view.getUint8(3) !== 0) return invalid('mesh frame reserved byte is not 0')
  const length = view.getUint32(12)
  if (length > MAX_FRAME_PAYLOAD_BYTES) return invalid(`mesh frame declares ${length} payload bytes, over ${MAX_FRAME_PAYLOAD_BYTES}`)
  if (bytes.byteLength !== FRAME_HEADER_BYTES + length) {
    return invalid(`mesh frame declares ${length} payload bytes but carries ${bytes.byteLength - FRAME_HEADER_BYTES}`)
  }
  return ok({
    type,
    more: (flags & FLAG_MORE) !== 0,
    streamId: view.getUint32(4),
    requestId: view.getUint32(8),
    payload: bytes.subarray(FRAME_HEADER_BYTES),
  })
}

const utf8Encoder = new TextEncoder()
// fatal: invalid UTF-8 from a peer is refused, never silently replaced with U+FFFD
const utf8Decoder = new TextDecoder('utf-8', { fatal: true })

/**
 * A JSON value as UTF-8 bytes, for the payload (or chunked body) of Hello, Gossip, Request, Response, ...
 * Throws for a value JSON cannot carry (undefined, a function, a BigInt, a cycle): our bug, not the peer's.
 */
export function encodeJsonPayload(value: unknown): Uint8Array {
  const text = JSON.stringify(value)
  if (text === undefined) throw new TypeError('mesh JSON payload must be a JSON value')
  return utf8Encoder.encode(text)
}

/** The JSON value in a peer's payload; its shape is the caller's to check. */
export function parseJsonPayload(bytes: Uint8Array): Result<unknown> {
  let text: string
  try {
    text = utf8Decoder.decode(bytes)
  } catch {
    return invalid('mesh payload is not valid UTF-8')
  }
  try {
    return ok(JSON.parse(text))
  } catch {
    return invalid('mesh payload is not JSON')
  }
}

const invalid = (text: string) => err(reason('invalid', text))
