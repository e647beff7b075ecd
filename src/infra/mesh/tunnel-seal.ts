// The tunnel's encryption after the Hello (docs/mesh.md §3, "Sealing"). Both runtimes proved their keys in the
// Hello; the same keys give a shared secret (secp256k1 ECDH, x coordinate), and HKDF-SHA256 over it and both
// nonces gives one key per direction. Every frame after the Hello travels as
//
//   counter (8 bytes, u64 BE) ‖ ChaCha20-Poly1305(key of its direction, nonce = 0⁴ ‖ counter, frame) ‖ tag (16)
//
// The counter starts at 0 and goes up by one per frame, so the receiver knows the one counter it expects: a
// frame whose tag does not verify was altered or forged; a genuine one with a lower counter is a replay, with
// a higher one a frame was dropped or reordered on the way. Any of them ends the tunnel: nothing after it can be trusted.
import { createCipheriv, createDecipheriv, hkdfSync } from 'node:crypto'
import { secp256k1 } from '@noble/curves/secp256k1.js'
import { hexToBytes } from '@noble/hashes/utils.js'
import type { HelloRole } from '../../protocols/mesh/hello.js'

const ALGORITHM = 'chacha20-poly1305'
const TAG_BYTES = 16
const COUNTER_BYTES = 8
/** what sealing adds to a frame */
export const SEAL_OVERHEAD_BYTES = COUNTER_BYTES + TAG_BYTES
const KEY_LABEL = 'apiary-mesh-tunnel-v1'

export type SealBreak = 'forged' | 'replayed' | 'reordered'

export type Opened = { ok: true; frame: Uint8Array } | { ok: false; why: SealBreak }

/** One direction each: `seal` what this side sends, `open` what the peer sent, both in order. */
export interface TunnelSeal {
  seal(frame: Uint8Array): Uint8Array
  open(sealed: Uint8Array): Opened
}

export interface SealInputs {
  role: HelloRole
  /** this runtime's secret key */
  secretKey: Uint8Array
  /** the peer's runtime id (x-only, 64 hex), as proved in the Hello */
  peer: string
  self: string
  dialerNonce: string
  acceptorNonce: string
}

/**
 * The x coordinate of secretKey·P, P the peer's point lifted to even y. P and −P share it, so it is the same on
 * both sides whatever the parity of either key (x-only keys drop it).
 */
function sharedX(secretKey: Uint8Array, peer: string): Uint8Array {
  return secp256k1.getSharedSecret(secretKey, hexToBytes(`02${peer}`), true).subarray(1)
}

function directionKey(shared: Uint8Array, salt: Uint8Array, from: string, to: string): Buffer {
  return Buffer.from(hkdfSync('sha256', shared, salt, `${KEY_LABEL}\nfrom=${from}\nto=${to}`, 32))
}

/** The two directions' keys for a tunnel whose Hello is done; the same inputs on the peer mirror them. */
export function deriveTunnelSeal(i: SealInputs): TunnelSeal {
  const shared = sharedX(i.secretKey, i.peer)
  const [dialer, acceptor] = i.role === 'dialer' ? [i.self, i.peer] : [i.peer, i.self]
  const salt = hexToBytes(`${i.dialerNonce}${i.acceptorNonce}`)
  const dialerKey = directionKey(shared, salt, dialer, acceptor)
  const acceptorKey = directionKey(shared, salt, acceptor, dialer)
  const [sendKey, receiveKey] = i.role === 'dialer' ? [dialerKey, acceptorKey] : [acceptorKey, dialerKey]
  return createSeal(sendKey, receiveKey)
}

export function createSeal(sendKey: Buffer, receiveKey: Buffer): TunnelSeal {
  let sent = 0n
  let expected = 0n
  const nonce = (counter: bigint) => {
    const n = Buffer.alloc(12)
    n.writeBigUInt64BE(counter, 4)
    return n
  }
  return {
    seal(frame) {
      const counter = sent++
      const cipher = createCipheriv(ALGORITHM, sendKey, nonce(counter), { authTagLength: TAG_BYTES })
      const out = Buffer.allocUnsafe(COUNTER_BYTES + frame.byteLength + TAG_BYTES)
      out.writeBigUInt64BE(counter, 0)
      const body = cipher.update(frame)
      cipher.final()
      body.copy(out, COUNTER_BYTES)
      cipher.getAuthTag().copy(out, COUNTER_BYTES + body.byteLength)
      return out
    },
    open(sealed) {
      if (sealed.byteLength < SEAL_OVERHEAD_BYTES) return { ok: false, why: 'forged' }
      const bytes = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength)
      const counter = bytes.readBigUInt64BE(0)
      const decipher = createDecipheriv(ALGORITHM, receiveKey, nonce(counter), { authTagLength: TAG_BYTES })
      decipher.setAuthTag(bytes.subarray(bytes.byteLength - TAG_BYTES))
      const frame = decipher.update(bytes.subarray(COUNTER_BYTES, bytes.byteLength - TAG_BYTES))
      try {
        decipher.final()
      } catch {
        return { ok: false, why: 'forged' }
      }
      // judged after the tag: a counter is named replayed or reordered only when the frame itself is genuine
      if (counter < expected) return { ok: false, why: 'replayed' }
      if (counter > expected) return { ok: false, why: 'reordered' }
      expected++
      return { ok: true, frame }
    },
  }
}
