import type { WebSocket } from 'ws'

/**
 * Inbound flow control for one socket: the bytes of frames read and not yet finished (prepared, applied and,
 * for an EVENT, answered) are bounded. Over the bound the socket is paused, so TCP pushes back on the client
 * and nothing more is buffered here; at half the bound it resumes. The bound is in bytes, not frames:
 * 1,000 frames of 128 KiB would be 128 MiB per socket.
 */
export interface InboundFlow {
  /** what a frame of `frameBytes` is charged (release exactly that once it is done) */
  charge(frameBytes: number): number
  release(bytes: number): void
  readonly bytesInFlight: number
}

/**
 * Every frame costs at least this much: a flood of tiny frames ("[]") holds a message object, a parse and a
 * sequence entry per frame, which its own few bytes don't account for.
 */
export const MIN_FRAME_CHARGE_BYTES = 256

export function createInboundFlow(
  ws: Pick<WebSocket, 'pause' | 'resume' | 'readyState' | 'OPEN'>,
  maxBytesInFlight: number,
  onPause: () => void = () => {},
): InboundFlow {
  let inFlight = 0
  let paused = false
  return {
    charge(frameBytes) {
      const bytes = Math.max(frameBytes, MIN_FRAME_CHARGE_BYTES)
      inFlight += bytes
      if (!paused && inFlight > maxBytesInFlight) {
        paused = true
        ws.pause()
        onPause()
      }
      return bytes
    },
    release(bytes) {
      inFlight = Math.max(0, inFlight - bytes)
      if (paused && inFlight <= maxBytesInFlight / 2) {
        paused = false
        if (ws.readyState === ws.OPEN) ws.resume()
      }
    },
    get bytesInFlight() {
      return inFlight
    },
  }
}
