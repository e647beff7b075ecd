import { nip98WindowSeconds } from '../../protocols/nip98.js'

/**
 * NIP-98 replay guard (architecture §8): an auth event id is good for one request. Verify the event first, then
 * claim its id; never claim before verifying, or a forgery carrying someone's real id would burn it.
 * `claim` rejects with GateError when the backend cannot answer, and the caller then fails closed.
 */
export interface ReplayGuard {
  /** 'claimed' the first time (community, eventId) is seen within its TTL, 'replayed' after that */
  claim(community: string, eventId: string, ttlSeconds: number): Promise<'claimed' | 'replayed'>
}

// How far apart two clocks that judge one token may be (the client's, each node's, Redis'): NTP keeps hosts
// within a second; a minute covers a VM resumed late or a client without NTP.
export const maxClockSkewSeconds = 60

/**
 * How long an auth event id stays claimed: the created_at check accepts an event from `windowSeconds` before
 * its created_at to `windowSeconds` after (both ends inclusive), so one dated +window at its first use is still
 * accepted 2 × window later, and on a node whose clock lags by the skew later still.
 */
export const replayClaimTtlSeconds = (windowSeconds: number): number => 2 * windowSeconds + maxClockSkewSeconds + 1

// The cap keeps a caller passing a huge TTL from pinning ids (and memory) for days; an hour is far past any window.
export const minReplayTtlSeconds = replayClaimTtlSeconds(nip98WindowSeconds)
export const maxReplayTtlSeconds = 3600

/** The TTL a claim actually gets: whole seconds (Redis EX), clamped to [minReplayTtlSeconds, 3600]. */
export function clampReplayTtlSeconds(ttlSeconds: number): number {
  // a NaN TTL comes from our own arithmetic, not from a client: a bug, not something to clamp quietly
  if (Number.isNaN(ttlSeconds)) throw new RangeError('replay guard TTL is NaN')
  return Math.min(maxReplayTtlSeconds, Math.max(minReplayTtlSeconds, Math.ceil(ttlSeconds)))
}
