import type { CommunityStore } from './community-store.js'

export type BanLookup = (community: string, pubkey: string) => Promise<{ reason: string } | undefined>

/**
 * The per-write ban check (DESIGN §6) without one store round trip per event: lookups for the same
 * (community, pubkey) that arrive while one is in flight share its answer. Nothing is cached after it
 * settles, so an answer is never older than one round trip — a ban row written now refuses the next write.
 */
export function createBanLookup(store: CommunityStore, nowSeconds: () => number): BanLookup {
  const inFlight = new Map<string, Promise<{ reason: string } | undefined>>()
  return (community, pubkey) => {
    const key = `${community}\n${pubkey}`
    const pending = inFlight.get(key)
    if (pending) return pending
    const lookup = store.isBanned(community, pubkey, nowSeconds()).finally(() => inFlight.delete(key))
    inFlight.set(key, lookup)
    return lookup
  }
}
