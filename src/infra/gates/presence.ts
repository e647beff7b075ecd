/**
 * Presence (architecture §8): the latest status (kind 20001 content) of a pubkey in a community, kept only while
 * its heartbeats keep coming (TTL = 3 × heartbeat) and cleared when its last connection closes. Ephemeral
 * by design: a lost entry only shows someone offline early. Methods reject with GateError on backend failure.
 */
export interface PresenceStore {
  set(community: string, pubkey: string, status: string, ttlSeconds: number): Promise<void>
  /** the live statuses among `pubkeys`; a pubkey without one is absent from the map */
  get(community: string, pubkeys: string[]): Promise<Map<string, string>>
  clear(community: string, pubkey: string): Promise<void>
  /**
   * One more connection (on any node) holds this pubkey's presence. The count lives in the backend so a
   * close on one node can't clear a presence another node's connection still holds; it expires after
   * `ttlSeconds` unless `set` refreshes it, so a crashed node's counts stop mattering once its heartbeats do.
   */
  connect(community: string, pubkey: string, ttlSeconds: number): Promise<void>
  /**
   * One connection fewer; resolves the connections left. At 0 the presence is cleared in the same atomic
   * step, so a connect racing in on another node can't be undone by a separate clear.
   */
  disconnect(community: string, pubkey: string): Promise<number>
}

/** Whole seconds ≥ 1 (Redis EX); a non-positive or non-finite TTL is a bug in the caller. */
export function toPresenceTtlSeconds(ttlSeconds: number): number {
  if (!(ttlSeconds > 0 && Number.isFinite(ttlSeconds))) throw new RangeError(`presence TTL must be a finite number > 0: ${ttlSeconds}`)
  return Math.ceil(ttlSeconds)
}
