// Signing (NIP-01): pure, so the clients in other programs (src/client) and the relay sign the same way.
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js'
import { bip340KeyOf, signBip340 } from '../bip340.js'
import { computeEventId, type NostrEvent } from './event.js'

/** A secret key with its x-only pubkey (hex), computed once. */
export interface SigningKey {
  secretKey: Uint8Array
  pubkey: string
}

export interface EventTemplate {
  kind: number
  content: string
  tags?: string[][]
  /** kept when given; otherwise the caller's `nowSeconds` */
  created_at?: number
}

export function toSigningKey(secretKey: Uint8Array): SigningKey {
  return { secretKey, pubkey: bytesToHex(bip340KeyOf(secretKey).publicKey) }
}

export function signTemplate(key: SigningKey, t: EventTemplate, nowSeconds: number): NostrEvent {
  const unsigned = {
    pubkey: key.pubkey,
    created_at: t.created_at ?? nowSeconds,
    kind: t.kind,
    tags: t.tags ?? [],
    content: t.content,
  }
  const id = computeEventId(unsigned)
  const sig = bytesToHex(signBip340(bip340KeyOf(key.secretKey), hexToBytes(id)))
  return { id, ...unsigned, sig }
}
