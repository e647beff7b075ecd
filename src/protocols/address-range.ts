// Address ranges (`10.0.0.0/8`, `2001:db8::/32`): which peers are trusted proxies, which clients NIP-86 blockip
// refuses. Pure, so the config schema can refuse a bad entry at load and the edge can match peers with the same parser.
import { parseIpSegment, toCanonicalIp } from './ip-address.js'
import { reason } from './reasons.js'
import { err, ok, type Result } from './result.js'

/** An address range: the network's bytes (4 for IPv4, 16 for IPv6) and how many leading bits must match. */
export interface AddressRange {
  bytes: Uint8Array
  prefixBits: number
}

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

/**
 * What blockip stores for `text` (an address or a CIDR range): one spelling per range, so unblockip of any
 * spelling finds it. An IPv6 range narrower than the principal's network (`ipv6PrefixLength`, toIpPrincipal)
 * widens to it, since budgets and sockets are counted per network: blocking one address of a /64 leaves the
 * rest no way around. A single address is written bare (`198.51.100.7`), a range as `network/bits`.
 */
export function toBlockedRange(text: string, ipv6PrefixLength: number): Result<string> {
  const range = parseAddressRange(text)
  if (!range.ok) return range
  const { bytes } = range.value
  const v6 = bytes.length === 16
  const bits = v6 ? Math.min(range.value.prefixBits, ipv6PrefixLength) : range.value.prefixBits
  const network = masked(bytes, bits)
  const address = v6
    ? toCanonicalIp(Array.from({ length: 8 }, (_, i) => (((network[2 * i] ?? 0) << 8) | (network[2 * i + 1] ?? 0)).toString(16)).join(':'))
    : ok(network.join('.'))
  if (!address.ok) return address
  return ok(bits === network.length * 8 ? address.value : `${address.value}/${bits}`)
}

/** Whether `ip` lies in one of the stored blocks (toBlockedRange's spellings; one that fails to parse matches nothing). */
export function isInBlockedRanges(ip: string, blocked: readonly string[]): boolean {
  const ranges: AddressRange[] = []
  for (const entry of blocked) {
    const range = parseAddressRange(entry)
    if (range.ok) ranges.push(range.value)
  }
  return isInRanges(ip, ranges)
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

/** 4 or 16 bytes; parseIpSegment does the spelling rules (no octal octets, no brackets, mapped ⇒ IPv4). */
function toBytes(text: string): Uint8Array | undefined {
  if (/[%-]/.test(text)) return undefined // a zone names our interface; dashes are the key segment's own spelling
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
