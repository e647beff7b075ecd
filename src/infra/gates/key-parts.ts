// The parts every gate entry is keyed by, whichever backend holds it: a community id, a lowercase hex pubkey or
// event id, an IP address, a principal (a pubkey or `ip:<address>`). Our own code produced these values, so a
// non-canonical one is a bug and throws RangeError instead of being lowercased: an uppercase hex would open a
// second budget for the same pubkey. IP text is the exception, not canonical by nature, so it is normalised
// (parseIpSegment): every spelling of one address shares one budget. The Redis key names (infra/redis/keys.ts)
// and the one-node backends' map keys (memory-keys.ts) are both built from these.
import { isCommunityId, isHex64 } from '../../protocols/ids.js'
import { parseIpSegment } from '../../protocols/ip-address.js'

const IP_PRINCIPAL = 'ip:'

export function checkCommunityId(community: string): string {
  if (!isCommunityId(community)) throw new RangeError(`not a community id: ${JSON.stringify(community.slice(0, 80))}`)
  return community
}

export function checkHex64(value: string, what: string): string {
  if (!isHex64(value)) throw new RangeError(`${what} must be 64 lowercase hex digits: ${JSON.stringify(value.slice(0, 80))}`)
  return value
}

/** The address's one spelling with no `:` in it (parseIpSegment), so it fits between a key's separators. */
export function toIpSegment(ip: string): string {
  const parsed = parseIpSegment(ip)
  if (!parsed.ok) throw new RangeError(parsed.error)
  return parsed.value
}

/** A pubkey as it is, or `ip:` and the address's segment. The two never collide: `ip` is not 64 hex digits. */
export function toPrincipalSegment(principal: string): string {
  if (isHex64(principal)) return principal
  if (principal.startsWith(IP_PRINCIPAL)) return IP_PRINCIPAL + toIpSegment(principal.slice(IP_PRINCIPAL.length))
  throw new RangeError(`principal must be a lowercase 64-hex pubkey or ip:<address>: ${JSON.stringify(principal.slice(0, 80))}`)
}
