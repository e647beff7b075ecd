import { finalizeEvent, generateSecretKey, getPublicKey } from 'nostr-tools/pure'
import { asVerified, type NostrEvent, type VerifiedEvent } from '../../src/protocols/nip01/event'

/** A really signed event and the raw JSON a client would send for it. */
export interface SignedEvent {
  event: VerifiedEvent
  raw: string
}

export interface TestKeys {
  secretKey: Uint8Array
  pubkey: string
}

export interface EventTemplate {
  kind?: number
  /** unix seconds; defaults to now */
  created_at?: number
  tags?: string[][]
  content?: string
}

/** The keys of a secret given as hex (a relay key from a config, say). */
export function keysFromHex(secretHex: string): TestKeys {
  const secretKey = Uint8Array.from(Buffer.from(secretHex, 'hex'))
  return { secretKey, pubkey: getPublicKey(secretKey) }
}

export function makeKeys(): TestKeys {
  const secretKey = generateSecretKey()
  return { secretKey, pubkey: getPublicKey(secretKey) }
}

/** The NIP-01 wire form, fields in the order clients commonly send them. */
export function toRaw(e: NostrEvent): string {
  const { id, pubkey, created_at, kind, tags, content, sig } = e
  return JSON.stringify({ id, pubkey, created_at, kind, tags, content, sig })
}

/** Signs with nostr-tools (slow: pure JavaScript): tests needing hundreds of events should build them once. */
export function signEvent(keys: TestKeys, template: EventTemplate = {}): SignedEvent {
  const signed = finalizeEvent(
    {
      kind: template.kind ?? 1,
      created_at: template.created_at ?? Math.floor(Date.now() / 1000),
      tags: template.tags ?? [],
      content: template.content ?? '',
    },
    keys.secretKey,
  )
  const event = asVerified({
    id: signed.id,
    pubkey: signed.pubkey,
    created_at: signed.created_at,
    kind: signed.kind,
    tags: signed.tags,
    content: signed.content,
    sig: signed.sig,
  })
  return { event, raw: toRaw(event) }
}
