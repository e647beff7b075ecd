// The keyed MAC on every message of the Redis bus (docs/architecture.md §6.7): write access to Redis alone must
// not put an event into another node's live delivery. The key is derived from the relay key, which every node
// of a cluster shares (docs/cluster.md), so no new secret has to be distributed.
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto'

/** A MAC's length on the wire: 16 bytes of HMAC-SHA256 (128 bits, RFC 2104 §5's truncation) in base64url. */
export const BUS_MAC_CHARS = 22
const MAC_BYTES = 16
// HKDF's info names the use, so a key derived from the relay key for anything else never equals this one
const HKDF_INFO = 'apiary bus mac v1'

export interface BusMac {
  /** the MAC of a message as published on `channel` (the channel is bound in, so it can't be moved to another) */
  sign(channel: string, message: string): string
  verify(channel: string, message: string, mac: string): boolean
}

/** The bus MAC key of a cluster: HKDF-SHA256 of the relay's secret key. */
export function deriveBusMacKey(relaySecretKey: Uint8Array): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', relaySecretKey, new Uint8Array(0), HKDF_INFO, 32))
}

export function createBusMac(key: Uint8Array): BusMac {
  if (key.length < 32) throw new RangeError('bus MAC key must be at least 32 bytes')
  const digest = (channel: string, message: string): Buffer =>
    createHmac('sha256', key).update(channel).update('\n').update(message).digest().subarray(0, MAC_BYTES)
  return {
    sign: (channel, message) => digest(channel, message).toString('base64url'),
    verify(channel, message, mac) {
      if (mac.length !== BUS_MAC_CHARS) return false
      const got = Buffer.from(mac, 'base64url')
      return got.length === MAC_BYTES && timingSafeEqual(got, digest(channel, message))
    },
  }
}
