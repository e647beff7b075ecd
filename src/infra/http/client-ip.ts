// Which address a request comes from. Behind nginx or Caddy every socket's peer is the proxy, so every gate
// keyed by IP (the per-IP connection rate and count, the unauthenticated write budget, NIP-86 blockip, the
// NIP-86 `api` budget) would treat all clients as one. When the peer is one of `trustedProxies`, the client
// is the right-most X-Forwarded-For hop that is not itself a trusted proxy: each proxy appends the address
// it saw, so only hops to the right of the first untrusted one were written by machines we trust; anything
// further left is whatever the client chose to send. A peer outside the list has its header ignored.
//
// Pure: strings in, strings out; the adapter at the bottom only reads an IncomingMessage's fields.
import type { IncomingMessage } from 'node:http'
import { reason } from '../../protocols/reasons.js'
import { err, ok, type Result } from '../../protocols/result.js'
import { parseIpSegment } from '../redis/keys.js'
import { toCanonicalIp } from './nip86/moderation.js'

/** An address range: the network's bytes (4 for IPv4, 16 for IPv6) and how many leading bits must match. */
export interface AddressRange {
  bytes: Uint8Array
  prefixBits: number
}

/** What a socket with no peer address (already gone) is keyed as; it is closed a moment later anyway. */
export const UNKNOWN_PEER = '0.0.0.0'

/**
 * `203.0.113.7`, `10.0.0.0/8`, `2001:db8::/32`, `::1`: an address alone is a range of one. Host bits set
 * under the prefix (`10.0.0.1/8`) are masked off, as Go's net.ParseCIDR does. An IPv4-mapped IPv6 range
 * (`::ffff:10.0.0.0/104`) is its IPv4 range, since the peers it should match are reported in IPv4 form.
 */
export function parseAddressRange(text: string): Result<AddressRange> {
  const bad = err(reason('invalid', `not an IP address or CIDR range: ${JSON.stringify(text.slice(0, 64))}`))
  const [address = '', prefix, extra] = text.trim().split('/')
  if (extra !== undefined) return bad
  const bytes = toBytes(address)
  if (!bytes) return bad
  const givenAsV6 = address.includes(':')
  const maxBits = givenAsV6 ? 128 : 32
  if (prefix !== undefined && !/^(0|[1-9][0-9]{0,2})$/.test(prefix)) return bad
  let prefixBits = prefix === undefined ? maxBits : Number(prefix)
  if (prefixBits > maxBits) return bad
  if (givenAsV6 && bytes.length === 4) {
    if (prefixBits < 96) return bad // the range reaches outside ::ffff:0:0/96, where no IPv4 peer lives
    prefixBits -= 96
  }
  return ok({ bytes: masked(bytes, prefixBits), prefixBits })
}

/** Every entry parsed, or the first bad one's reason (config validation reports it). */
export function parseTrustedProxies(entries: readonly string[]): Result<AddressRange[]> {
  const out: AddressRange[] = []
  for (const entry of entries) {
    const range = parseAddressRange(entry)
    if (!range.ok) return range
    out.push(range.value)
  }
  return ok(out)
}

/** `ip` (any spelling toCanonicalIp accepts) lies in one of `ranges`; an unparsable `ip` lies in none. */
export function isInRanges(ip: string, ranges: readonly AddressRange[]): boolean {
  if (ranges.length === 0) return false
  const canonical = toCanonicalIp(ip)
  const bytes = canonical.ok ? toBytes(canonical.value) : undefined
  return bytes !== undefined && ranges.some((r) => r.bytes.length === bytes.length && startsWith(bytes, r))
}

/**
 * The client's address, canonical (toCanonicalIp: `::ffff:1.2.3.4` ⇒ `1.2.3.4`, IPv6 compressed lowercase).
 * `forwardedFor` is the X-Forwarded-For value, or its values in arrival order when it came more than once
 * (RFC 9110 §5.3: several field lines mean the same as one joined by commas).
 * - the peer is not a trusted proxy, or there is no header ⇒ the peer;
 * - walking the hops from the right, the first that is not a trusted proxy ⇒ that hop;
 * - every hop is a trusted proxy ⇒ the left-most (the farthest one a trusted machine reported);
 * - the walk meets a hop that is not a bare address (a name, a port, `unknown`, a zone) ⇒ the peer: what
 *   wrote it can't be trusted to have written the rest, and the peer is what we would use without the header.
 * Empty list elements (`a,,b`, a trailing comma) are skipped, as RFC 9110 §5.6.1 asks of recipients.
 */
export function resolveClientIp(
  peer: string | undefined,
  forwardedFor: string | readonly string[] | undefined,
  trusted: readonly AddressRange[],
): string {
  const canonicalPeer = toCanonicalOr(peer ?? UNKNOWN_PEER)
  if (forwardedFor === undefined || !isInRanges(canonicalPeer, trusted)) return canonicalPeer
  const hops = (typeof forwardedFor === 'string' ? [forwardedFor] : forwardedFor)
    .join(',')
    .split(',')
    .map((h) => h.trim())
    .filter((h) => h !== '')
  let leftmostTrusted: string | undefined
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = toCanonicalIp(hops[i] ?? '')
    if (!hop.ok) return canonicalPeer
    if (!isInRanges(hop.value, trusted)) return hop.value
    leftmostTrusted = hop.value
  }
  return leftmostTrusted ?? canonicalPeer
}

/** How the edge reads a request's origin (gateway upgrades and NIP-86 calls alike). */
export interface ClientAddressing {
  /** the client's canonical address (resolveClientIp over the socket's peer and X-Forwarded-For) */
  clientIp(req: IncomingMessage): string
  /**
   * X-Forwarded-Proto/Host are honoured: `trustForwardedProto` is on and, once `trustedProxies` names any
   * proxy, the peer is one of them (an untrusted peer could otherwise choose the NIP-42/NIP-98 URL we check
   * against). With an empty list the setting keeps its meaning from before the list existed: any peer.
   */
  forwardedHeadersTrusted(req: IncomingMessage): boolean
}

export function createClientAddressing(o: { trustedProxies: readonly string[]; trustForwardedProto: boolean }): ClientAddressing {
  const parsed = parseTrustedProxies(o.trustedProxies)
  // the config schema refuses a bad entry, so this is a wiring bug (a Config built around the schema)
  if (!parsed.ok) throw new RangeError(`trustedProxies: ${parsed.error}`)
  const trusted = parsed.value
  return {
    clientIp: (req) => resolveClientIp(req.socket.remoteAddress, req.headersDistinct['x-forwarded-for'], trusted),
    forwardedHeadersTrusted: (req) =>
      o.trustForwardedProto && (trusted.length === 0 || isInRanges(req.socket.remoteAddress ?? UNKNOWN_PEER, trusted)),
  }
}

function toCanonicalOr(ip: string): string {
  const c = toCanonicalIp(ip)
  return c.ok ? c.value : ip
}

/** 4 or 16 bytes; keys.ts's parser does the spelling rules (no octal octets, no brackets, mapped ⇒ IPv4). */
function toBytes(text: string): Uint8Array | undefined {
  if (/[%-]/.test(text)) return undefined // a zone names our interface; dashes are keys.ts's own spelling
  const segment = parseIpSegment(text)
  if (!segment.ok) return undefined
  if (!segment.value.includes('-')) return Uint8Array.from(segment.value.split('.').map(Number))
  const out = new Uint8Array(16)
  for (const [i, group] of segment.value.split('-').entries()) {
    const g = Number.parseInt(group, 16)
    out[2 * i] = g >> 8
    out[2 * i + 1] = g & 0xff
  }
  return out
}

function masked(bytes: Uint8Array, prefixBits: number): Uint8Array {
  return bytes.map((b, i) => {
    const keep = Math.max(0, Math.min(8, prefixBits - 8 * i))
    return b & ((0xff << (8 - keep)) & 0xff)
  })
}

function startsWith(bytes: Uint8Array, range: AddressRange): boolean {
  return masked(bytes, range.prefixBits).every((b, i) => b === range.bytes[i])
}
