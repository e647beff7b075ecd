// The map keys of the one-node gate backends (rate limits, presence, NIP-98 claims, connection slots). They
// need no Redis naming, only the same canonical parts (key-parts.ts), so that these backends refuse and
// normalise exactly what the Redis ones do. Separated by `/`, which no part contains.

import { checkCommunityId, checkHex64, toIpSegment, toPrincipalSegment } from './key-parts.js'
import type { Budget } from './rate-limit.js'

export function memoryBudgetKey(budget: Budget): string {
  if ('ip' in budget) return `ip/${toIpSegment(budget.ip)}/${budget.limit}`
  return `${checkCommunityId(budget.community)}/${toPrincipalSegment(budget.principal)}/${budget.limit}`
}

/** One pubkey's presence in a community. */
export function memoryPresenceKey(community: string, pubkey: string): string {
  return `${checkCommunityId(community)}/${checkHex64(pubkey, 'pubkey')}`
}

/** One claimed NIP-98 event id in a community. */
export function memoryClaimKey(community: string, eventId: string): string {
  return `${checkCommunityId(community)}/${checkHex64(eventId, 'event id')}`
}

/** One IP's open sockets. */
export function memoryIpKey(ip: string): string {
  return toIpSegment(ip)
}
