// The text of an IP address, which is not canonical by nature (`::1` = `0:0::1`, `::ffff:1.2.3.4` is how a
// dual-stack socket reports `1.2.3.4`). Every gate keyed by address (per-IP rates and sockets, NIP-86 blockip,
// trusted proxies) must see one spelling per address, or one client gets one budget per spelling. These two
// parsers decide that spelling: one for key names (no `:`), one for what operators and the edge read.
import { reason } from './reasons.js'
import { err, ok, type Result } from './result.js'

/**
 * An IP address as one key segment: IPv4 in dotted decimal (`203.0.113.7`); IPv6 fully expanded to eight
 * 4-digit lowercase hex groups joined by `-` (`2001-0db8-0000-0000-0000-0000-0000-0001`), because a `:`
 * would split the segment and the compressed forms are not unique. Normalised so that every spelling of one
 * address shares one budget: hex case, `::` compression, leading zeros of a group, an IPv4-mapped IPv6
 * address (`::ffff:203.0.113.7`, how a dual-stack socket reports an IPv4 client) becomes its IPv4 form, and
 * a zone (`fe80::1%eth0`, which names our interface, not the peer) is dropped. Idempotent: an encoded
 * segment parses to itself. Refused: IPv4 with leading zeros (octal in some parsers), brackets, ports.
 */
export function parseIpSegment(text: string): Result<string> {
  const lower = text.toLowerCase()
  const v4 = parseIpv4(lower)
  if (v4) return ok(v4.join('.'))
  const groups = ENCODED_V6.test(lower) ? lower.split('-').map((g) => Number.parseInt(g, 16)) : parseIpv6(lower.replace(/%[^%]+$/, ''))
  if (!groups) return err(reason('invalid', `not an IP address: ${JSON.stringify(text.slice(0, 64))}`))
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    const [hi = 0, lo = 0] = groups.slice(6)
    return ok([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff].join('.'))
  }
  return ok(groups.map((g) => g.toString(16).padStart(4, '0')).join('-'))
}

const ENCODED_V6 = /^[0-9a-f]{4}(-[0-9a-f]{4}){7}$/
const OCTET = '(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])'
const IPV4 = new RegExp(`^${OCTET}\\.${OCTET}\\.${OCTET}\\.${OCTET}$`)
const HEXTET = /^[0-9a-f]{1,4}$/

function parseIpv4(text: string): number[] | undefined {
  return IPV4.test(text) ? text.split('.').map(Number) : undefined
}

// RFC 4291 §2.2 text forms: eight hextets, one `::` standing for one or more zero groups, and an optional
// dotted IPv4 tail counting as two hextets.
function parseIpv6(text: string): number[] | undefined {
  const halves = text.split('::')
  if (halves.length > 2) return undefined
  const [head = '', tail] = halves
  const headGroups = parseHextets(head, tail === undefined)
  const tailGroups = tail === undefined ? [] : parseHextets(tail, true)
  if (!headGroups || !tailGroups) return undefined
  if (tail === undefined) return headGroups.length === 8 ? headGroups : undefined
  const missing = 8 - headGroups.length - tailGroups.length
  return missing >= 1 ? [...headGroups, ...new Array<number>(missing).fill(0), ...tailGroups] : undefined
}

function parseHextets(part: string, mayEndInIpv4: boolean): number[] | undefined {
  if (part === '') return []
  const pieces = part.split(':')
  const out: number[] = []
  for (const [i, piece] of pieces.entries()) {
    const v4 = mayEndInIpv4 && i === pieces.length - 1 ? parseIpv4(piece) : undefined
    if (v4) out.push(((v4[0] ?? 0) << 8) | (v4[1] ?? 0), ((v4[2] ?? 0) << 8) | (v4[3] ?? 0))
    else if (HEXTET.test(piece)) out.push(Number.parseInt(piece, 16))
    else return undefined
  }
  return out
}

/**
 * The address an IP's budgets, socket caps and blocks are keyed on (its principal): an IPv4 address is
 * itself; an IPv6 address is the network of its first `ipv6PrefixLength` bits (`2001:db8:1:2::` for every
 * address of 2001:db8:1:2::/64), because a subscriber is handed a whole /64 (RFC 6177) and could otherwise
 * take one budget per address. 128 keys each address on its own. Canonical text (toCanonicalIp).
 */
export function toIpPrincipal(ip: string, ipv6PrefixLength: number): Result<string> {
  if (!Number.isInteger(ipv6PrefixLength) || ipv6PrefixLength < 1 || ipv6PrefixLength > 128) {
    throw new RangeError(`ipv6PrefixLength must be an integer in 1..128: ${ipv6PrefixLength}`)
  }
  const canonical = toCanonicalIp(ip)
  if (!canonical.ok || !canonical.value.includes(':') || ipv6PrefixLength === 128) return canonical
  const groups = (parseIpSegment(canonical.value) as { ok: true; value: string }).value.split('-').map((g) => Number.parseInt(g, 16))
  const masked = groups.map((g, i) => {
    const keep = Math.max(0, Math.min(16, ipv6PrefixLength - 16 * i))
    return g & ((0xffff << (16 - keep)) & 0xffff)
  })
  return toCanonicalIp(masked.map((g) => g.toString(16)).join(':'))
}

/**
 * One spelling per address, so a block matches however a socket reports the peer: IPv4 dotted decimal,
 * IPv6 as RFC 5952 text (lowercase, leading zeros dropped, the longest zero run as `::`), an IPv4-mapped IPv6
 * address (how a dual-stack socket reports an IPv4 client) as its IPv4 form. The gateway checks
 * `isIpBlocked` with `toCanonicalIp(remoteAddress)`. Parsed by parseIpSegment, so a block and a budget agree
 * on which spellings are one address.
 */
export function toCanonicalIp(text: string): Result<string> {
  // a zone names our own interface, and the key segment's dashed IPv6 spelling is not one a client writes
  if (/[%-]/.test(text)) return err(reason('invalid', 'ip must be an IPv4 or IPv6 address'))
  const segment = parseIpSegment(text)
  if (!segment.ok) return err(reason('invalid', 'ip must be an IPv4 or IPv6 address'))
  if (!segment.value.includes('-')) return segment
  const groups = segment.value.split('-').map((g) => Number.parseInt(g, 16).toString(16))
  let best = { at: -1, length: 1 } // RFC 5952 §4.2.2: `::` never stands for a single zero group
  for (let i = 0; i < groups.length; i++) {
    let j = i
    while (j < groups.length && groups[j] === '0') j++
    if (j - i > best.length) best = { at: i, length: j - i }
    i = j
  }
  if (best.at < 0) return ok(groups.join(':'))
  return ok(`${groups.slice(0, best.at).join(':')}::${groups.slice(best.at + best.length).join(':')}`)
}
