import type { NostrEvent } from './nip01/event.js'
import { KIND_AUTH } from './nip01/kinds.js'
import { reason } from './reasons.js'
import { err, OK_VOID, type Result } from './result.js'

export interface AuthExpectation {
  challenge: string
  /** this community's relay URL (never another community's configured URL) */
  relayUrl: string
  nowSeconds: number
  windowSeconds: number
}

/**
 * NIP-42: a kind-22242 event naming our challenge and our relay URL, created within ±windowSeconds of now.
 * The signature is the verifier's job. All refusals are `invalid:`: the AUTH event itself is wrong.
 */
export function checkAuthEvent(e: NostrEvent, expect: AuthExpectation): Result<void> {
  if (e.kind !== KIND_AUTH) return invalid(`auth event must be kind ${KIND_AUTH}`)
  const challenge = firstTagValue(e, 'challenge')
  if (challenge === undefined) return invalid('auth event has no challenge tag')
  if (challenge !== expect.challenge) return invalid('auth challenge does not match')
  const relay = firstTagValue(e, 'relay')
  if (relay === undefined) return invalid('auth event has no relay tag')
  const got = normalizeRelayUrl(relay)
  if (got === undefined || got !== normalizeRelayUrl(expect.relayUrl)) {
    return invalid('auth relay tag does not name this relay')
  }
  if (Math.abs(e.created_at - expect.nowSeconds) > expect.windowSeconds) {
    return invalid('auth event created_at is outside the allowed window')
  }
  return OK_VOID
}

/**
 * Canonical form for comparing relay URLs: ws/wss only; scheme and host lowercased; default port (ws 80,
 * wss 443), trailing host dot and trailing path slash dropped; other ports, path and query kept, fragment
 * dropped. Undefined when the text is not a ws(s) URL.
 */
export function normalizeRelayUrl(url: string): string | undefined {
  let u: URL
  try {
    u = new URL(url.trim())
  } catch {
    return undefined
  }
  if (u.protocol !== 'ws:' && u.protocol !== 'wss:') return undefined
  if (u.username !== '' || u.password !== '') return undefined
  // WHATWG URL already lowercases the host and drops the scheme's default port
  const hostname = u.hostname.endsWith('.') ? u.hostname.slice(0, -1) : u.hostname
  if (hostname === '') return undefined
  const port = u.port === '' ? '' : ':' + u.port
  const path = u.pathname.replace(/\/+$/, '')
  return u.protocol + '//' + hostname + port + path + u.search
}

const firstTagValue = (e: NostrEvent, name: string): string | undefined => e.tags.find((t) => t[0] === name)?.[1]

const invalid = (text: string): Result<never> => err(reason('invalid', text))
