// Which address a request comes from. Behind nginx or Caddy every socket's peer is the proxy, so every gate
// keyed by IP (the per-IP connection rate and count, the unauthenticated write budget, NIP-86 blockip, the
// NIP-86 `api` budget) would treat all clients as one. When the peer is one of `trustedProxies`, the client
// is the right-most X-Forwarded-For hop that is not itself a trusted proxy: each proxy appends the address
// it saw, so only hops to the right of the first untrusted one were written by machines we trust; anything
// further left is whatever the client chose to send. A peer outside the list has its header ignored.
//
// Pure: strings in, strings out; the adapter at the bottom only reads an IncomingMessage's fields.
import type { IncomingMessage } from 'node:http'
import { type AddressRange, isInRanges, parseTrustedProxies } from '../../protocols/address-range.js'
import { toCanonicalIp, toIpPrincipal } from '../../protocols/ip-address.js'

/** What a socket with no peer address (already gone) is keyed as; it is closed a moment later anyway. */
export const UNKNOWN_PEER = '0.0.0.0'

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
   * What a client address is charged and capped as (toIpPrincipal with ipv6PrefixLength): itself for IPv4,
   * its network for IPv6. Every per-IP gate takes this, never the bare address.
   */
  principalOf(ip: string): string
  /**
   * What a socket is counted under before any request has arrived (its headers can't be read yet): its peer's
   * principal, or undefined for a trusted proxy, whose one address carries many clients.
   */
  peerKeyOf(peer: string | undefined): string | undefined
  /**
   * X-Forwarded-Proto/Host are honoured: `trustForwardedProto` is on and, once `trustedProxies` names any
   * proxy, the peer is one of them (an untrusted peer could otherwise choose the NIP-42/NIP-98 URL we check
   * against). With an empty list the setting keeps its meaning from before the list existed: any peer.
   */
  forwardedHeadersTrusted(req: IncomingMessage): boolean
}

export function createClientAddressing(o: {
  trustedProxies: readonly string[]
  trustForwardedProto: boolean
  ipv6PrefixLength: number
}): ClientAddressing {
  const parsed = parseTrustedProxies(o.trustedProxies)
  // the config schema refuses a bad entry, so this is a wiring bug (a Config built around the schema)
  if (!parsed.ok) throw new RangeError(`trustedProxies: ${parsed.error}`)
  const trusted = parsed.value
  const principalOf = (ip: string) => {
    const principal = toIpPrincipal(ip, o.ipv6PrefixLength)
    return principal.ok ? principal.value : ip
  }
  return {
    clientIp: (req) => resolveClientIp(req.socket.remoteAddress, req.headersDistinct['x-forwarded-for'], trusted),
    principalOf,
    peerKeyOf: (peer) => {
      const canonical = toCanonicalOr(peer ?? UNKNOWN_PEER)
      return isInRanges(canonical, trusted) ? undefined : principalOf(canonical)
    },
    forwardedHeadersTrusted: (req) =>
      o.trustForwardedProto && (trusted.length === 0 || isInRanges(req.socket.remoteAddress ?? UNKNOWN_PEER, trusted)),
  }
}

function toCanonicalOr(ip: string): string {
  const c = toCanonicalIp(ip)
  return c.ok ? c.value : ip
}

/** The scheme and host the client addressed: what a NIP-98 `u` names and what an `Origin` must match. */
export function requestOrigin(
  req: IncomingMessage,
  addressing: Pick<ClientAddressing, 'forwardedHeadersTrusted'>,
): { secure: boolean; host: string } {
  const forwarded = addressing.forwardedHeadersTrusted(req)
  const secure = Boolean((req.socket as { encrypted?: boolean }).encrypted) || (forwarded && req.headers['x-forwarded-proto'] === 'https')
  const host = forwarded ? ((req.headers['x-forwarded-host'] as string | undefined) ?? req.headers.host) : req.headers.host
  return { secure, host: host ?? '' }
}
