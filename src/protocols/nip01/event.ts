import { schnorr } from '@noble/curves/secp256k1.js'
import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex, hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js'
import { verifyBip340 } from '../bip340.js'
import { isHex64, isHex128 } from '../ids.js'
import type { Limits } from '../limits.js'
import { reason } from '../reasons.js'
import { err, OK_VOID, ok, type Result } from '../result.js'
import { MAX_KIND } from './kinds.js'

/** NIP-01 event as it travels on the wire. */
export interface NostrEvent {
  id: string
  pubkey: string
  created_at: number
  kind: number
  tags: string[][]
  content: string
  sig: string
}

declare const verifiedBrand: unique symbol
/** An event whose id hash and Schnorr signature have been checked (only the verifier creates these). */
export type VerifiedEvent = NostrEvent & { readonly [verifiedBrand]: true }

/** Only the verifier (and tests building fixtures) may call this. */
export const asVerified = (e: NostrEvent): VerifiedEvent => e as VerifiedEvent

// --- serialization, id, size ---------------------------------------------------------------------------

type Signable = Pick<NostrEvent, 'pubkey' | 'created_at' | 'kind' | 'tags' | 'content'>

/**
 * NIP-01 canonical form `[0,pubkey,created_at,kind,tags,content]`. JSON.stringify emits no whitespace and
 * escapes exactly what NIP-01 lists (\n \" \\ \r \t \b \f, other controls as \u00XX), like nostr-tools.
 */
export const serializeEvent = (e: Signable): string => JSON.stringify([0, e.pubkey, e.created_at, e.kind, e.tags, e.content])

export const computeEventId = (e: Signable): string => bytesToHex(sha256(utf8ToBytes(serializeEvent(e))))

/**
 * The stored form of an event: exactly the seven NIP-01 fields in a fixed order, so client extras never reach
 * the store or other subscribers. Built once per accepted event and reused for every fan-out frame.
 */
export const toRawEvent = (e: NostrEvent): string =>
  JSON.stringify({
    id: e.id,
    pubkey: e.pubkey,
    created_at: e.created_at,
    kind: e.kind,
    tags: e.tags,
    content: e.content,
    sig: e.sig,
  })

/** UTF-8 byte length without encoding. A lone surrogate counts 3 bytes (TextEncoder writes U+FFFD). */
export function utf8Length(s: string): number {
  let bytes = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x80) bytes += 1
    else if (c < 0x800) bytes += 2
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && isLowSurrogate(s.charCodeAt(i + 1))) {
      bytes += 4
      i++
    } else bytes += 3
  }
  return bytes
}

const isLowSurrogate = (c: number): boolean => c >= 0xdc00 && c <= 0xdfff

/**
 * Whether `s` takes more than `maxBytes` of UTF-8. Counts only when its length cannot tell: each UTF-16 unit
 * takes 1 to 3 bytes (a surrogate pair 4 for its 2 units), so a string of at most maxBytes / 3 units fits and
 * one of more than maxBytes units does not. A 1 KB event under 128 KiB limits is never counted.
 */
export function utf8LongerThan(s: string, maxBytes: number): boolean {
  if (s.length > maxBytes) return true
  if (s.length * 3 <= maxBytes) return false
  return utf8Length(s) > maxBytes
}

/**
 * Reference verifier (id hash, then BIP-340 Schnorr via @noble/curves). The verifier pool must agree with it;
 * never throws, whatever the input.
 */
export function verifyEventNoble(e: NostrEvent): 'ok' | 'bad-id' | 'bad-sig' {
  try {
    if (computeEventId(e) !== e.id) return 'bad-id'
    return schnorr.verify(hexToBytes(e.sig), hexToBytes(e.id), hexToBytes(e.pubkey)) ? 'ok' : 'bad-sig'
  } catch {
    return 'bad-sig'
  }
}

/**
 * verifyEventNoble's verdicts with libsecp256k1 as WASM (bip340.ts): faster than noble's JavaScript arithmetic,
 * and none of the BigInts noble allocates. What clients check the events a relay sends them with: an agent
 * process may receive one event for each of hundreds of its agents at once. Stricter only in that ids,
 * pubkeys and signatures must be lowercase hex, as NIP-01 says. Never throws, whatever the input.
 */
export function verifyEventWasm(e: NostrEvent): 'ok' | 'bad-id' | 'bad-sig' {
  try {
    if (computeEventId(e) !== e.id) return 'bad-id'
  } catch {
    return 'bad-id'
  }
  if (!isHex64(e.pubkey) || !isHex128(e.sig)) return 'bad-sig'
  return verifyBip340(hexToBytes(e.sig), hexToBytes(e.id), hexToBytes(e.pubkey)) ? 'ok' : 'bad-sig'
}

// --- parsing untrusted input -----------------------------------------------------------------------------

export interface EventWithRaw {
  event: NostrEvent
  /** toRawEvent(event), computed once while checking maxEventBytes */
  raw: string
}

/** Shape, limits and created_at window of a client-sent event; the signature is the verifier's job. */
export function parseEvent(json: unknown, limits: Limits, nowSeconds: number): Result<NostrEvent> {
  const parsed = parseEventWithRaw(json, limits, nowSeconds)
  return parsed.ok ? ok(parsed.value.event) : parsed
}

/**
 * As parseEvent, also returning the stored raw form. `nowSeconds` undefined skips the created_at window:
 * NIP-42 AUTH events have their own, narrower window checked in nip42.
 */
export function parseEventWithRaw(json: unknown, limits: Limits, nowSeconds: number | undefined): Result<EventWithRaw> {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return invalid('event is not an object')
  const o = json as Record<string, unknown>
  const { id, pubkey, sig, kind, created_at, tags, content } = o
  if (!isHex64(id)) return invalid('id must be 64 lowercase hex characters')
  if (!isHex64(pubkey)) return invalid('pubkey must be 64 lowercase hex characters')
  if (!isHex128(sig)) return invalid('sig must be 128 lowercase hex characters')
  if (!Number.isInteger(kind) || (kind as number) < 0 || (kind as number) > MAX_KIND) {
    return invalid('kind must be an integer from 0 to 65535')
  }
  const when = checkCreatedAt(created_at, limits, nowSeconds)
  if (!when.ok) return when
  const tagsOk = checkTags(tags, limits)
  if (!tagsOk.ok) return tagsOk
  if (typeof content !== 'string') return invalid('content must be a string')
  if (utf8LongerThan(content, limits.maxContentBytes)) return invalid('content too long')
  const event: NostrEvent = {
    id,
    pubkey,
    created_at: created_at as number,
    kind: kind as number,
    tags: tags as string[][],
    content,
    sig,
  }
  const raw = toRawEvent(event)
  if (utf8LongerThan(raw, limits.maxEventBytes)) return invalid('event too large')
  return ok({ event, raw })
}

function checkCreatedAt(v: unknown, limits: Limits, nowSeconds: number | undefined): Result<void> {
  if (!Number.isSafeInteger(v) || (v as number) < 0) return invalid('created_at must be a non-negative integer')
  if (nowSeconds === undefined) return OK_VOID
  if ((v as number) > nowSeconds + limits.createdAtFutureSeconds) return invalid('created_at too far in the future')
  if ((v as number) < nowSeconds - limits.createdAtPastSeconds) return invalid('created_at too far in the past')
  return OK_VOID
}

function checkTags(v: unknown, limits: Limits): Result<void> {
  if (!Array.isArray(v)) return invalid('tags must be an array')
  if (v.length > limits.maxEventTags) return invalid('too many tags')
  for (const tag of v) {
    if (!Array.isArray(tag) || tag.length === 0) return invalid('each tag must be a non-empty array')
    for (const item of tag) {
      if (typeof item !== 'string') return invalid('tag elements must be strings')
      if (utf8LongerThan(item, limits.maxTagValueBytes)) return invalid('tag element too long')
    }
  }
  return OK_VOID
}

const invalid = (text: string): Result<never> => err(reason('invalid', text))

/**
 * Raw JSON the relay wrote itself (a stored presence) or read off its own bus, parsed only as far as matching
 * needs (pubkey, kind, created_at, tags): not validated, not verified. Never throws; undefined for anything else.
 */
export function parseEventShape(raw: string): NostrEvent | undefined {
  try {
    const v: unknown = JSON.parse(raw)
    return typeof v === 'object' &&
      v !== null &&
      'pubkey' in v &&
      'kind' in v &&
      'created_at' in v &&
      Array.isArray((v as { tags?: unknown }).tags)
      ? (v as NostrEvent)
      : undefined
  } catch {
    return undefined
  }
}
