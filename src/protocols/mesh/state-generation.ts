import type { NostrEvent } from '../nip01/event.js'
import { dTagOf } from '../nip01/kinds.js'
import { RELAY_ONLY_KINDS } from '../nip29.js'

/** The generation tag on every relay-signed state event an owner writes: who wrote it, under which lease. */
export const GENERATION_TAG = 'generation'

/**
 * Channel state versions (39000–39005 signed by the relay key) delivered on one node, newest generation per
 * channel. With the mesh on, an owner stopped (SIGSTOP, a long pause) between storing a version and publishing
 * it publishes it when it wakes, after its successor's versions have gone out: a subscriber must not see the
 * channel's state go back to an older owner's (test/faults/mesh.test.ts, the SIGSTOPped owner). Without the
 * mesh no version carries a generation and nothing is ever stale.
 */
export class StateGenerations {
  private readonly newest = new Map<string, number>()

  constructor(private readonly relayPubkey: string) {}

  /** true when `event` is a state version of an older generation than one already seen for its channel */
  stale(event: NostrEvent): boolean {
    if (event.pubkey !== this.relayPubkey || !RELAY_ONLY_KINDS.has(event.kind)) return false
    const generation = Number(event.tags.find((t) => t[0] === GENERATION_TAG)?.[1])
    if (!Number.isSafeInteger(generation)) return false
    const channel = dTagOf(event)
    if (generation < (this.newest.get(channel) ?? 0)) return true
    this.newest.set(channel, generation)
    return false
  }
}
