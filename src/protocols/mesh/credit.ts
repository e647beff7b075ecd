/**
 * Per-stream flow control by credit, counted in payload bytes (HTTP/2's WINDOW_UPDATE, RFC 9113 §6.9, minus
 * the connection-level window). A sender spends credit on each payload it sends and stops at zero; the
 * receiver grants credit back in Credit frames as its application processes the data. Pure accounting: the
 * session decides which frames count, and must exempt Credit frames and the control stream so a full window
 * can never hold back the frame that would reopen it.
 *
 * Invariant per stream, with a conforming peer: the sender's available credit + payload bytes in flight +
 * the receiver's unprocessed bytes + bytes processed but not yet granted + grants in flight = the initial window.
 */
import { reason } from '../reasons.js'
import { err, OK_VOID, ok, type Result } from '../result.js'

/**
 * 4 MiB: a few 1 MiB frames in flight per stream keep a LAN link busy (it covers the bandwidth-delay product
 * of 10 Gbit/s at 3 ms round trip, 3.75 MB), while a stalled peer can hold at most 4 MiB per stream of our memory.
 */
export const INITIAL_STREAM_CREDIT_BYTES = 4_194_304
/**
 * 64 MiB: no receiver we run grants more than its configured window, so a grant beyond this is a broken or
 * hostile peer; the cap also keeps the running sum far inside exact integer range.
 */
export const MAX_WINDOW_BYTES = 67_108_864
/** A Credit frame's payload: the grant, u32 big-endian. */
export const CREDIT_PAYLOAD_BYTES = 4

export interface SendWindow {
  /** credit left, bytes */
  readonly available: number
  canSend(bytes: number): boolean
  /** Spends credit for a payload about to be sent. Throws if it would go negative: check canSend first. */
  consume(bytes: number): void
  /** Adds credit from the peer's Credit frame. */
  grant(bytes: number): Result<void>
}

export function createSendWindow(initialCreditBytes: number = INITIAL_STREAM_CREDIT_BYTES): SendWindow {
  checkWindowSize(initialCreditBytes, 0)
  let available = initialCreditBytes
  return {
    get available() {
      return available
    },
    canSend: (bytes) => isByteCount(bytes) && bytes <= available,
    consume(bytes) {
      if (!isByteCount(bytes)) throw new RangeError(`cannot consume ${bytes} bytes of credit`)
      if (bytes > available) throw new RangeError(`sending ${bytes} bytes exceeds the ${available} bytes of credit left`)
      available -= bytes
    },
    grant(bytes) {
      if (!Number.isInteger(bytes) || bytes <= 0) return err(reason('invalid', `mesh credit grant ${bytes} is not a positive integer`))
      if (available + bytes > MAX_WINDOW_BYTES) {
        return err(reason('invalid', `mesh credit grant of ${bytes} bytes would pass the ${MAX_WINDOW_BYTES}-byte window`))
      }
      available += bytes
      return OK_VOID
    },
  }
}

export interface ReceiveWindowOptions {
  /**
   * Grant back only once this many bytes have been processed since the last grant, so Credit frames are
   * batched. Default: half the initial window. Keep it at most initialCreditBytes − MAX_FRAME_PAYLOAD_BYTES + 1:
   * above that, a sender whose leftover credit is just short of one full frame waits for a grant that the
   * receiver, having processed everything, never reaches the threshold to send.
   */
  grantThresholdBytes?: number
}

export interface ReceiveWindow {
  /** Accounts a payload the peer sent; `invalid:` when the peer exceeded the credit it was granted. */
  receive(bytes: number): Result<void>
  /** The application processed `bytes`; returns the credit to grant back now (0 while batching). */
  consumed(bytes: number): number
  /** credit the peer still holds, as we have granted it */
  readonly peerCreditBytes: number
  /** received and not yet processed */
  readonly unprocessedBytes: number
}

export function createReceiveWindow(
  initialCreditBytes: number = INITIAL_STREAM_CREDIT_BYTES,
  options: ReceiveWindowOptions = {},
): ReceiveWindow {
  checkWindowSize(initialCreditBytes, 1)
  const threshold = options.grantThresholdBytes ?? Math.max(1, Math.floor(initialCreditBytes / 2))
  if (!Number.isInteger(threshold) || threshold < 1 || threshold > initialCreditBytes) {
    throw new RangeError(`grantThresholdBytes ${threshold} must be an integer in 1..${initialCreditBytes}`)
  }
  let peerCredit = initialCreditBytes
  let unprocessed = 0
  let processedSinceGrant = 0
  return {
    get peerCreditBytes() {
      return peerCredit
    },
    get unprocessedBytes() {
      return unprocessed
    },
    receive(bytes) {
      if (!isByteCount(bytes)) throw new RangeError(`cannot receive ${bytes} bytes`)
      if (bytes > peerCredit) return err(reason('invalid', `mesh peer sent ${bytes} bytes with ${peerCredit} bytes of credit`))
      peerCredit -= bytes
      unprocessed += bytes
      return OK_VOID
    },
    consumed(bytes) {
      if (!isByteCount(bytes) || bytes > unprocessed) {
        throw new RangeError(`cannot mark ${bytes} bytes processed with ${unprocessed} bytes unprocessed`)
      }
      unprocessed -= bytes
      processedSinceGrant += bytes
      if (processedSinceGrant < threshold) return 0
      const grant = processedSinceGrant
      processedSinceGrant = 0
      peerCredit += grant
      return grant
    },
  }
}

/** A Credit frame's payload. Throws for a grant no window of ours could issue: our bug. */
export function encodeCredit(grantBytes: number): Uint8Array {
  if (!Number.isInteger(grantBytes) || grantBytes < 1 || grantBytes > MAX_WINDOW_BYTES) {
    throw new RangeError(`mesh credit grant ${grantBytes} must be an integer in 1..${MAX_WINDOW_BYTES}`)
  }
  const bytes = new Uint8Array(CREDIT_PAYLOAD_BYTES)
  new DataView(bytes.buffer).setUint32(0, grantBytes)
  return bytes
}

/** The grant in a peer's Credit frame; whether the amount is acceptable is SendWindow.grant's call. */
export function parseCredit(payload: Uint8Array): Result<number> {
  if (payload.byteLength !== CREDIT_PAYLOAD_BYTES) {
    return err(reason('invalid', `mesh Credit payload is ${payload.byteLength} bytes, not ${CREDIT_PAYLOAD_BYTES}`))
  }
  return ok(new DataView(payload.buffer, payload.byteOffset, CREDIT_PAYLOAD_BYTES).getUint32(0))
}

const isByteCount = (n: number) => Number.isInteger(n) && n >= 0

function checkWindowSize(bytes: number, min: number): void {
  if (!Number.isInteger(bytes) || bytes < min || bytes > MAX_WINDOW_BYTES) {
    throw new RangeError(`mesh window of ${bytes} bytes must be an integer in ${min}..${MAX_WINDOW_BYTES}`)
  }
}
