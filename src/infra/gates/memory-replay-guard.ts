// NIP-98 replay guard for one node: claimed ids with their expiry, bounded in count.
import { memoryClaimKey } from './memory-keys.js'
import { clampReplayTtlSeconds, type ReplayGuard } from './replay-guard.js'

export interface MemoryReplayGuardOptions {
  /** clock in ms; default performance.now() (monotonic: a wall-clock step neither frees nor pins claims) */
  now?: () => number
  /**
   * Most claims held at once; default 100_000 (≈ 550 NIP-98 requests/s sustained over the 181 s minimum
   * TTL, beyond what the per-IP `api` limit lets one node see). Expired claims go first; if every claim is
   * still live, the oldest 1% are dropped. An oldest claim is the one whose event is likeliest to fail the
   * NIP-98 created_at window anyway, so dropping it is the least replay we can allow while staying bounded.
   */
  maxEntries?: number
}

export interface MemoryReplayGuard extends ReplayGuard {
  /** claims currently held (tests, metrics) */
  readonly size: number
}

// Claims examined at the front per call: two per claim outpaces one insertion per claim.
const trimPerClaim = 2

export function createMemoryReplayGuard(opts: MemoryReplayGuardOptions = {}): MemoryReplayGuard {
  const now = opts.now ?? (() => performance.now())
  const maxEntries = opts.maxEntries ?? 100_000
  if (!Number.isInteger(maxEntries) || maxEntries < 1) throw new RangeError(`maxEntries must be an integer ≥ 1: ${maxEntries}`)
  const evictChunk = Math.max(1, Math.floor(maxEntries / 100))
  // memoryClaimKey → expiry (ms on `now`'s clock); insertion order is claim order, so the front is the oldest.
  // The TTL varies per claim, so the front is not always the first to expire: trimming stops at the first
  // live claim and a later expired one waits for makeRoom or its own re-claim.
  const claims = new Map<string, number>()

  function makeRoom(t: number): void {
    for (const [k, expiresAt] of claims) if (expiresAt <= t) claims.delete(k)
    for (const k of claims.keys()) {
      if (claims.size <= maxEntries - evictChunk) break
      claims.delete(k)
    }
  }

  return {
    get size() {
      return claims.size
    },
    async claim(community, eventId, ttlSeconds) {
      const key = memoryClaimKey(community, eventId)
      const ttlMs = clampReplayTtlSeconds(ttlSeconds) * 1000
      const t = now()
      const expiresAt = claims.get(key)
      if (expiresAt !== undefined && expiresAt > t) return 'replayed'
      if (!claims.delete(key) && claims.size >= maxEntries) makeRoom(t)
      claims.set(key, t + ttlMs)
      let examined = 0
      for (const [k, v] of claims) {
        if (examined++ === trimPerClaim || v > t) break
        claims.delete(k)
      }
      return 'claimed'
    },
  }
}
