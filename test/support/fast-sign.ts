import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js'
import { signSchnorr } from 'tiny-secp256k1'
import { asVerified, computeEventId, type NostrEvent } from '../../src/protocols/nip01/event'
import { type EventTemplate, type SignedEvent, type TestKeys, toRaw } from './events'

/**
 * signEvent for bursts: the same BIP-340 signature, made with libsecp256k1 compiled to WASM, many times
 * faster than nostr-tools. For tests that need thousands
 * of events; everything else signs with nostr-tools (signEvent), the reference.
 */
export function signEventFast(keys: TestKeys, template: EventTemplate = {}): SignedEvent {
  const unsigned = {
    pubkey: keys.pubkey,
    created_at: template.created_at ?? Math.floor(Date.now() / 1000),
    kind: template.kind ?? 1,
    tags: template.tags ?? [],
    content: template.content ?? '',
  }
  const id = computeEventId(unsigned)
  const sig = bytesToHex(signSchnorr(hexToBytes(id), keys.secretKey))
  const event: NostrEvent = { id, ...unsigned, sig }
  return { event: asVerified(event), raw: toRaw(event) }
}
