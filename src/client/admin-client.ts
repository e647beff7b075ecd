// A NIP-86 management client: one JSON-RPC call to a relay's `POST /`, signed with NIP-98. Used by
// `apiary admin`; it works against any NIP-86 relay, not only this one.
import { createHash, randomBytes } from 'node:crypto'
import { schnorr } from '@noble/curves/secp256k1.js'
import { hexToBytes } from '@noble/hashes/utils.js'
import { isHex64, isHex64IgnoringCase } from '../protocols/ids.js'
import type { NostrEvent } from '../protocols/nip01/event.js'
import { type SigningKey, signTemplate, toSigningKey } from '../protocols/nip01/sign.js'
import { NIP86_CONTENT_TYPE } from '../protocols/nip86/methods.js'
import { KIND_HTTP_AUTH } from '../protocols/nip98.js'

export interface ManagementCall {
  /** the relay's http(s) URL; NIP-98 signs it into `u`, so it must be the URL the relay sees (its Host picks the community) */
  url: string
  secretKeyHex: string
  method: string
  params: unknown[]
  /** injectable for tests; the global fetch by default */
  fetch?: typeof fetch
  nowSeconds?: number
}

export interface ManagementAnswer {
  status: number
  /** the parsed JSON body (NIP-86: `{ result, error? }`), or the raw text when the body is not JSON */
  body: unknown
}

/** A pubkey or event id as the CLIs take it: 64 lowercase hex characters (no npub/note). */
export const isPubkeyHex = (s: string | undefined): s is string => s !== undefined && isHex64(s)

/** Lowercase a pasted hex key or id; other arguments are kept as typed. */
export const lowerHexArg = (a: string): string => (isHex64(a.toLowerCase()) ? a.toLowerCase() : a)

/** `http://host:port` gains its `/`; any other http(s) URL is kept exactly. Undefined when not http(s). */
export function toManagementUrl(url: string): string | undefined {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return undefined
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return undefined
  // NIP-98 compares `u` with the request URL; `http://h` is requested as `http://h/`, so sign that.
  return /^https?:\/\/[^/?#]+$/i.test(url) ? `${url}/` : url
}

export function isSecretKeyHex(hex: string): boolean {
  if (!isHex64IgnoringCase(hex)) return false
  try {
    schnorr.getPublicKey(hexToBytes(hex.toLowerCase()))
    return true
  } catch {
    return false // zero, or not below the curve order
  }
}

export function toAdminKey(secretKeyHex: string): SigningKey {
  return toSigningKey(hexToBytes(secretKeyHex.toLowerCase()))
}

/** The NIP-98 event for POSTing `body` to `url`; NIP-86 requires the payload tag. */
export function signManagementAuth(key: SigningKey, url: string, body: string, nowSeconds: number): NostrEvent {
  const payload = createHash('sha256').update(body, 'utf8').digest('hex')
  const tags = [
    ['u', url],
    ['method', 'POST'],
    ['payload', payload],
  ]
  return signTemplate(key, { kind: KIND_HTTP_AUTH, content: '', tags }, nowSeconds)
}

/**
 * The `Authorization` for a `GET` of a node's operator-only detail (/mesh/status, /health/ready): NIP-98 with a
 * random nonce tag, since the relay claims each event id and two reads in one second would otherwise be one id.
 */
export function operatorGetAuthorization(secretKeyHex: string, url: string, nowSeconds = Math.floor(Date.now() / 1000)): string {
  const tags = [
    ['u', url],
    ['method', 'GET'],
    ['nonce', randomBytes(8).toString('hex')],
  ]
  const event = signTemplate(toAdminKey(secretKeyHex), { kind: KIND_HTTP_AUTH, content: '', tags }, nowSeconds)
  return `Nostr ${Buffer.from(JSON.stringify(event), 'utf8').toString('base64')}`
}

/** One NIP-86 call. Throws on a bad URL or key (caller's bug) and when the relay cannot be reached. */
export async function callManagement(call: ManagementCall): Promise<ManagementAnswer> {
  const url = toManagementUrl(call.url)
  if (url === undefined) throw new TypeError(`not an http(s) URL: ${call.url}`)
  if (!isSecretKeyHex(call.secretKeyHex)) throw new TypeError('secret key must be 64 hex characters')
  const body = JSON.stringify({ method: call.method, params: call.params })
  const event = signManagementAuth(toAdminKey(call.secretKeyHex), url, body, call.nowSeconds ?? Math.floor(Date.now() / 1000))
  const res = await (call.fetch ?? fetch)(url, {
    method: 'POST',
    headers: {
      'Content-Type': NIP86_CONTENT_TYPE,
      Authorization: `Nostr ${Buffer.from(JSON.stringify(event), 'utf8').toString('base64')}`,
    },
    body,
  })
  const text = await res.text()
  try {
    return { status: res.status, body: JSON.parse(text) as unknown }
  } catch {
    return { status: res.status, body: text }
  }
}
