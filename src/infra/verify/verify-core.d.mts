import type { NostrEvent } from '../../protocols/nip01/event.js'
import type { VerifyVerdict } from './verifier.js'

export type SchnorrChoice = 'auto' | 'native' | 'wasm'
export interface Schnorr {
  name: 'native' | 'wasm'
  /** Buffers, not plain Uint8Arrays: bcrypto checks Buffer.isBuffer */
  verify(digest: Buffer, pubkey: Buffer, sig: Buffer): boolean
  /** why 'auto' fell back to wasm */
  fallback?: string
}

export function loadSchnorr(choice: SchnorrChoice): Schnorr
export function serializeForId(event: NostrEvent): string
export function hasIdFields(event: unknown): event is Omit<NostrEvent, 'id' | 'sig'>
export function checkEvent(event: NostrEvent, schnorr: Schnorr): VerifyVerdict
export function preimageOf(event: NostrEvent): string | null
export function checkSigned(id: string, pubkey: string, sig: string, preimage: string, schnorr: Schnorr): VerifyVerdict
