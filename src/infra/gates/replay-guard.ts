/**
 * NIP-98 replay guard (architecture §8): an auth event id is good for one request. Verify the event first, then
 * claim its id; never claim before verifying, or a forgery carrying someone's real id would burn it.
 * `claim` rejects with GateError when the backend cannot answer, and the caller then fails closed.
 */
export interface ReplayGuard {
  /** 'claimed' the first time (community, eventId) is seen within its TTL, 'replayed' after that */
  claim(community: string, eventId: string, ttlSeconds: number): Promise<'claimed' | 'replayed'>
}

// The claim must outlive the window in which the created_at check still accepts the event (NIP-98 suggests
// 60 s): 120 s covers it with room for clock skew between the client and every node. The cap keeps
// a caller passing a huge TTL from pinning ids (and memory) for days; an hour is far past any window.
export const minReplayTtlSeconds = 120
export const maxReplayTtlSeconds = 3600

/** The TTL a claim actually gets: whole seconds (Redis EX), clamped to [120, 3600]. */
export function clampReplayTtlSeconds(ttlSeconds: number): number {
  // a NaN TTL comes from our own arithmetic, not from a client: a bug, not something to clamp quietly
  if (Number.isNaN(ttlSeconds)) throw new RangeError('replay guard TTL is NaN')
  return Math.min(maxReplayTtlSeconds, Math.max(minReplayTtlSeconds, Math.ceil(ttlSeconds)))
}
