// The memory that keeps a signed conn-control payload from acting twice on this node (a replay from anyone
// who can PUBLISH on Redis), and the age past which any control payload does nothing.

/** Control payloads older than this do nothing: a replayed ban broadcast can't kick anyone a day later. */
export const CONTROL_MAX_AGE_SECONDS = 300
/**
 * Conn-control payloads applied here, by id, for their freshness window: a replay of a signed DisconnectPubkey or
 * DisconnectCommunity (anyone who can PUBLISH on Redis can resend one) is counted and skipped. Older ids
 * than the window need no memory: they are refused as stale. Bounded: past `capacity` the oldest go first.
 */
export class ControlReplayMemory {
  private readonly seen = new Map<string, number>()
  constructor(private readonly capacity = 10_000) {}

  /** true the first time `id` is offered within its window */
  claim(id: string, createdAt: number, nowSeconds: number): boolean {
    for (const [old, expiresAt] of this.seen) {
      if (expiresAt > nowSeconds && this.seen.size < this.capacity) break
      this.seen.delete(old)
    }
    if (this.seen.has(id)) return false
    this.seen.set(id, createdAt + CONTROL_MAX_AGE_SECONDS)
    return true
  }
}
