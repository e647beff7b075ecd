import type { NostrEvent } from '../../protocols/nip01/event.js'
import type { VerifyVerdict } from './verifier.js'

export function serializeForId(event: NostrEvent): string
export function hasIdFields(event: unknown): event is Omit<NostrEvent, 'id' | 'sig'>
export function checkEventWasm(event: NostrEvent): VerifyVerdict
export function preimageOf(event: NostrEvent): string | null
export function checkSignedWasm(id: string, pubkey: string, sig: string, preimage: string): VerifyVerdict
