/**
 * Presence (DESIGN §6): the latest status (kind 20001 content) of a pubkey in a community, kept only while
 * its heartbeats keep coming (TTL = 3 × heartbeat) and cleared when its last connection closes. Ephemeral
 * by design: a lost entry only shows someone offline early. Methods reject with GateError on backend failure.
 */
export interface PresenceStore {
  set(community: string, pubkey: string, status: string, ttlSeconds: number): Promise<void>
  /** the live statuses among `pubkeys`; a pubkey without one is absent from the map */
  get(community: string, pubkeys: string[]): Promise<Map<string, string>>
  clear(community: string, pubkey: string): Promise<void>
}

/** Whole seconds ≥ 1 (Redis EX); a non-positive or non-finite TTL is a bug in the caller. */
export function toPresenceTtlSeconds(ttlSeconds: number): number {
  if (!(ttlSeconds > 0 && Number.isFinite(ttlSeconds))) throw new RangeError(`presence TTL must be a finite number > 0: ${ttlSeconds}`)
  return Math.ceil(ttlSeconds)
}
