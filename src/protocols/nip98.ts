import type { Limits } from './limits.js'
import { type NostrEvent, parseEventWithRaw } from './nip01/event.js'
import { reason } from './reasons.js'
import { err, ok, type Result } from './result.js'

export const KIND_HTTP_AUTH = 27235

// NIP-98: "created_at MUST be within a reasonable time window (suggestion 60 seconds)".
export const nip98WindowSeconds = 60

export interface Nip98Expectation {
  /** the absolute URL the client addressed: this community's, never another's */
  url: string
  method: string
  nowSeconds: number
  windowSeconds: number
  /** sha256 hex of the body as received; undefined skips the payload check (NIP-98: servers MAY check) */
  bodySha256Hex?: string
  /** NIP-86 makes the NIP-98 `payload` tag required; plain NIP-98 only says clients SHOULD send it */
  requirePayload?: boolean
}

/**
 * Shape limits for an auth event. Its content SHOULD be empty and it carries a few short tags; anything
 * near these bounds is not an auth event. The created_at window is checked below, against `windowSeconds`.
 */
const AUTH_EVENT_LIMITS: Limits = {
  maxMessageBytes: 16_384,
  maxEventBytes: 16_384,
  maxSubscriptions: 0,
  maxFilters: 0,
  maxReqValues: 0,
  maxLimit: 0,
  defaultLimit: 0,
  maxSubidLength: 0,
  maxEventTags: 32,
  maxTagValueBytes: 4_096,
  maxContentBytes: 4_096,
  createdAtPastSeconds: 0,
  createdAtFutureSeconds: 0,
}

// Node refuses request headers over 16 KiB anyway; this keeps decoding bounded wherever this runs.
const MAX_TOKEN_CHARS = 16_384
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/

/**
 * NIP-98: `Authorization: Nostr <base64 event JSON>` naming this exact URL and method, created within
 * ±windowSeconds, with a `payload` tag matching the body when one is required or present. The signature is
 * the verifier's job: a caller must verify the returned event before trusting (or claiming) it.
 * A missing header is `auth-required:`; every other refusal is `invalid:` (both are HTTP 401).
 */
export function checkNip98(authorization: string | undefined, expect: Nip98Expectation): Result<NostrEvent> {
  if (authorization === undefined || authorization.trim() === '')
    return err(reason('auth-required', 'NIP-98 Authorization header required'))
  const event = decodeToken(authorization)
  if (!event.ok) return event
  const e = event.value
  if (e.kind !== KIND_HTTP_AUTH) return invalid(`auth event must be kind ${KIND_HTTP_AUTH}`)
  if (Math.abs(e.created_at - expect.nowSeconds) > expect.windowSeconds)
    return invalid('auth event created_at is outside the allowed window')
  const u = firstTagValue(e, 'u')
  if (u === undefined) return invalid('auth event has no u tag')
  const got = normalizeHttpUrl(u)
  if (got === undefined || got !== normalizeHttpUrl(expect.url)) return invalid('auth u tag does not name this URL')
  const method = firstTagValue(e, 'method')
  if (method === undefined) return invalid('auth event has no method tag')
  // HTTP methods are case-sensitive, but clients sign what their library was given (nostr-tools' own
  // example signs 'post'); a server routes only upper-case methods, so no other request can match.
  if (method.toUpperCase() !== expect.method.toUpperCase()) return invalid('auth method tag does not match the request')
  const payload = firstTagValue(e, 'payload')
  if (payload === undefined) return expect.requirePayload ? invalid('auth event has no payload tag') : ok(e)
  if (expect.bodySha256Hex !== undefined && payload.toLowerCase() !== expect.bodySha256Hex) {
    return invalid('auth payload tag does not match the body')
  }
  return ok(e)
}

function decodeToken(authorization: string): Result<NostrEvent> {
  const m = /^Nostr\s+(\S+)\s*$/i.exec(authorization.trim())
  if (!m) return invalid('Authorization scheme must be Nostr')
  const token = m[1] as string
  if (token.length > MAX_TOKEN_CHARS) return invalid('auth token too long')
  if (!BASE64.test(token)) return invalid('auth token is not base64')
  let json: unknown
  try {
    const binary = atob(token)
    const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0))
    json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes))
  } catch {
    return invalid('auth token is not base64-encoded event JSON')
  }
  // no window here: parseEvent's is the publishing one; NIP-98's narrower one is checked by checkNip98
  const parsed = parseEventWithRaw(json, AUTH_EVENT_LIMITS, undefined)
  return parsed.ok ? ok(parsed.value.event) : parsed
}

/**
 * Canonical form for comparing NIP-98 `u` URLs: http/https only, scheme and host lowercased, default port
 * (80, 443) and a trailing host dot dropped; path and query kept as sent (NIP-98: "exactly the same as the
 * absolute request URL (including query parameters)"), fragment dropped (never sent to a server).
 * WHATWG URL gives an empty path as "/", so `http://h` and `http://h/` are one URL. Undefined when not http(s).
 */
export function normalizeHttpUrl(url: string): string | undefined {
  let u: URL
  try {
    u = new URL(url.trim())
  } catch {
    return undefined
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return undefined
  if (u.username !== '' || u.password !== '') return undefined
  const hostname = u.hostname.endsWith('.') ? u.hostname.slice(0, -1) : u.hostname
  if (hostname === '') return undefined
  const port = u.port === '' ? '' : `:${u.port}`
  return `${u.protocol}//${hostname}${port}${u.pathname}${u.search}`
}

const firstTagValue = (e: NostrEvent, name: string): string | undefined => e.tags.find((t) => t[0] === name)?.[1]

const invalid = (text: string): Result<never> => err(reason('invalid', text))
