import { type AddressRange, isInRanges, parseAddressRange } from '../../protocols/address-range.js'
import type { CommunityStore } from './community-store.js'

/**
 * Each community's NIP-86 blocked addresses and ranges, as this node checks them at every WebSocket upgrade
 * and NIP-86 call: read once and kept, parsed, rather than read and parsed per check. A blockip or unblockip
 * drops the copy on the node that made it at once and, by broadcast, on the others (docs/architecture.md §8);
 * `ttlMs` bounds how long a node that missed the broadcast keeps the old list.
 */
export interface BlockedIps {
  /** `ip` lies in one of `community`'s blocked ranges; rejects when the list cannot be read */
  isBlocked(community: string, ip: string): Promise<boolean>
  /** the list changed (here, or on another node): the next check reads it again */
  invalidate(community: string): void
}

export interface BlockedIpsOptions {
  /** how long a list read is reused (config accessCacheTtlMs); 0 reads it for every check */
  ttlMs: number
  /** elapsed time, ms (monotonic: a wall-clock step must not stretch the TTL) */
  nowMs: () => number
}

interface Entry {
  ranges: Promise<AddressRange[]>
  /** when its read started: a change committed during the read may be missing from it */
  readAtMs: number
}

export function createBlockedIps(store: Pick<CommunityStore, 'listBlockedIps'>, opts: BlockedIpsOptions): BlockedIps {
  const lists = new Map<string, Entry>()

  function read(community: string): Entry {
    const entry: Entry = { ranges: rangesOf(store, community), readAtMs: opts.nowMs() }
    if (opts.ttlMs > 0) lists.set(community, entry)
    // a failed read is not kept: the next check tries again (and, failing, refuses again)
    entry.ranges.catch(() => {
      if (lists.get(community) === entry) lists.delete(community)
    })
    return entry
  }

  return {
    async isBlocked(community, ip) {
      const kept = lists.get(community)
      const entry = kept && opts.nowMs() - kept.readAtMs < opts.ttlMs ? kept : read(community)
      return isInRanges(ip, await entry.ranges)
    },
    // a read still in flight answers the checks that shared it; the next check starts a read of its own
    invalidate: (community) => void lists.delete(community),
  }
}

async function rangesOf(store: Pick<CommunityStore, 'listBlockedIps'>, community: string): Promise<AddressRange[]> {
  const ranges: AddressRange[] = []
  // what blockip stored (toBlockedRange's spellings); an entry that fails to parse matches nothing
  for (const { value } of await store.listBlockedIps(community)) {
    const range = parseAddressRange(value)
    if (range.ok) ranges.push(range.value)
  }
  return ranges
}
