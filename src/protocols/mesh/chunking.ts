/**
 * Bodies larger than one frame: `toChunks` splits a body into frames of at most MAX_FRAME_PAYLOAD_BYTES with
 * MORE set on all but the last; the reassembler joins them back per (streamId, requestId).
 *
 * Memory bound: the reassembler holds at most maxBufferedBytes payload bytes (and never more than one body's
 * maxBodyBytes in one body) plus maxPartialBodies × maxChunksPerBody chunk views, whatever a peer sends. Payload bytes alone would not bound
 * it: a peer sending 1-byte chunks would have us hold millions of objects, each view possibly keeping a
 * whole WebSocket receive buffer alive.
 *
 * The wire carries no "first chunk" marker, so after a refusal the reassembler cannot tell the rest of the
 * refused body from a new one. A refusal means the peer broke the framing contract (it knows these limits):
 * the tunnel should answer Error and close rather than keep reading.
 */
import { reason } from '../reasons.js'
import { err, ok, type Result } from '../result.js'
import { type FrameType, MAX_FRAME_PAYLOAD_BYTES, type MeshFrame } from './frames.js'

/**
 * 16 MiB (16 frames): 128 events at the default 128 KiB maxEventBytes, thousands of typical ones; a larger
 * answer must be paged.
 */
export const MAX_BODY_BYTES = 16_777_216
/**
 * Payload held in unfinished bodies per tunnel, all bodies together: four maximal bodies. Without it a peer that
 * starts MAX_PARTIAL_BODIES bodies and never finishes them could have us hold 64 × 16 MiB = 1 GiB. Credit does
 * not cap this: credit has to be granted back as chunks are buffered here, or a body larger than the window
 * could never complete.
 */
export const MAX_BUFFERED_BYTES = 4 * MAX_BODY_BYTES
/** Bodies in progress at once per tunnel; with MAX_BODY_BYTES it bounds the reassembler's memory (above). */
export const MAX_PARTIAL_BODIES = 64
/**
 * toChunks needs 16 chunks for a maximal body; 64 leaves room for a sender that chunks finer (256 KiB) to
 * interleave streams more fairly, while keeping per-body object overhead small.
 */
export const MAX_CHUNKS_PER_BODY = 64

export interface ChunkHeader {
  type: FrameType
  streamId: number
  requestId: number
}

/**
 * The frames that carry `body`; their payloads are views into `body` (encodeFrame copies them out). An empty
 * body is one frame with an empty payload. Throws for a body over MAX_BODY_BYTES: our code must never build one.
 */
export function toChunks(header: ChunkHeader, body: Uint8Array): MeshFrame[] {
  if (body.byteLength > MAX_BODY_BYTES) throw new RangeError(`mesh body of ${body.byteLength} bytes exceeds ${MAX_BODY_BYTES}`)
  const { type, streamId, requestId } = header
  if (body.byteLength === 0) return [{ type, streamId, requestId, more: false, payload: body }]
  const frames: MeshFrame[] = []
  for (let start = 0; start < body.byteLength; start += MAX_FRAME_PAYLOAD_BYTES) {
    const end = Math.min(start + MAX_FRAME_PAYLOAD_BYTES, body.byteLength)
    frames.push({ type, streamId, requestId, more: end < body.byteLength, payload: body.subarray(start, end) })
  }
  return frames
}

export interface ReassemblerOptions {
  maxBodyBytes?: number
  maxBufferedBytes?: number
  maxPartialBodies?: number
  maxChunksPerBody?: number
}

/** What one accepted frame yields: a finished body, or nothing yet. */
export type Reassembled = { complete: true; type: FrameType; streamId: number; requestId: number; body: Uint8Array } | { complete: false }

export interface Reassembler {
  /** Adds a parsed frame. `invalid:` when the peer broke the chunking limits; the refused body's data is dropped. */
  accept(frame: MeshFrame): Result<Reassembled>
  /**
   * Drops one partial body (on Cancel, or when a request is given up). True if there was one. Chunks of that
   * body still in flight would start a new body: drop frames for requests no longer outstanding before accept.
   */
  abort(streamId: number, requestId: number): boolean
  /** payload bytes held in partial bodies */
  readonly bufferedBytes: number
  /** bodies in progress */
  readonly partialBodies: number
}

interface PartialBody {
  type: FrameType
  chunks: Uint8Array[]
  bytes: number
}

const NOT_YET: Result<Reassembled> = ok({ complete: false })

export function createReassembler(options: ReassemblerOptions = {}): Reassembler {
  const maxBodyBytes = options.maxBodyBytes ?? MAX_BODY_BYTES
  const maxBufferedBytes = options.maxBufferedBytes ?? MAX_BUFFERED_BYTES
  const maxPartialBodies = options.maxPartialBodies ?? MAX_PARTIAL_BODIES
  const maxChunksPerBody = options.maxChunksPerBody ?? MAX_CHUNKS_PER_BODY
  // keyed by "streamId:requestId": streamId × 2³² + requestId would pass 2⁵³ and collide
  const partials = new Map<string, PartialBody>()
  let bufferedBytes = 0

  const drop = (key: string) => {
    const partial = partials.get(key)
    if (partial === undefined) return false
    bufferedBytes -= partial.bytes
    partials.delete(key)
    return true
  }

  const refuse = (key: string, text: string) => {
    drop(key)
    return err(reason('invalid', text))
  }

  function accept(frame: MeshFrame): Result<Reassembled> {
    const key = `${frame.streamId}:${frame.requestId}`
    const partial = partials.get(key)
    const chunkBytes = frame.payload.byteLength
    if (partial === undefined) {
      if (chunkBytes > maxBodyBytes) return refuse(key, `mesh body exceeds ${maxBodyBytes} bytes`)
      if (!frame.more) return ok(completed(frame, [frame.payload], chunkBytes))
      if (partials.size >= maxPartialBodies) return refuse(key, `more than ${maxPartialBodies} mesh bodies in progress`)
      if (bufferedBytes + chunkBytes > maxBufferedBytes) return refuse(key, `unfinished mesh bodies exceed ${maxBufferedBytes} bytes`)
      partials.set(key, { type: frame.type, chunks: [frame.payload], bytes: chunkBytes })
      bufferedBytes += chunkBytes
      return NOT_YET
    }
    if (frame.type !== partial.type) return refuse(key, `mesh body continued with frame type ${frame.type}, began as ${partial.type}`)
    if (partial.bytes + chunkBytes > maxBodyBytes) return refuse(key, `mesh body exceeds ${maxBodyBytes} bytes`)
    if (partial.chunks.length >= maxChunksPerBody) return refuse(key, `mesh body exceeds ${maxChunksPerBody} chunks`)
    if (frame.more && bufferedBytes + chunkBytes > maxBufferedBytes)
      return refuse(key, `unfinished mesh bodies exceed ${maxBufferedBytes} bytes`)
    partial.chunks.push(frame.payload)
    partial.bytes += chunkBytes
    bufferedBytes += chunkBytes
    if (frame.more) return NOT_YET
    drop(key)
    return ok(completed(frame, partial.chunks, partial.bytes))
  }

  return {
    accept,
    abort: (streamId, requestId) => drop(`${streamId}:${requestId}`),
    get bufferedBytes() {
      return bufferedBytes
    },
    get partialBodies() {
      return partials.size
    },
  }
}

/**
 * One copy at completion, even for a single chunk: the chunks are views into the caller's receive buffers,
 * and a body the application keeps must neither pin those buffers nor change if they are reused.
 */
function completed(last: MeshFrame, chunks: Uint8Array[], bytes: number): Reassembled {
  const body = new Uint8Array(bytes)
  let offset = 0
  for (const chunk of chunks) {
    body.set(chunk, offset)
    offset += chunk.byteLength
  }
  return { complete: true, type: last.type, streamId: last.streamId, requestId: last.requestId, body }
}
