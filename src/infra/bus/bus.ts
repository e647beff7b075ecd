import type { Observable } from 'rxjs'
import type { ControlChannel } from '../../protocols/control.js'

/** A community's channels: its accepted events, and the two control channels (docs/architecture.md §5). */
export type CommunityChannel = 'events' | ControlChannel

/**
 * The cross-node bus port (docs/architecture.md §6.7, §9): best-effort pub/sub between the nodes of a cluster.
 * Backends: local (in-process, one node or several in one process) and redis (pub/sub on a dedicated
 * subscriber connection). Both run the same contract suite (test/infra/bus/bus.contract.ts).
 */
export interface Bus {
  readonly nodeId: string
  /**
   * This backend's name for one of a community's channels, to pass to publish and watch: the backend names
   * its channels, callers never spell them. Throws RangeError for a bad community id (a bug).
   */
  channelOf(community: string, channel: CommunityChannel): string
  /** best effort; resolves when handed to the backend; rejects (BusError with code) when it is down */
  publish(channel: string, payload: string): Promise<void>
  /**
   * Refcounted: the first subscriber subscribes the backend, the last unsubscribe unsubscribes it after
   * `unsubscribeDebounceMs` (a resubscribe within it cancels: no churn). Own messages (same nodeId) are
   * never delivered (own-echo suppression). Completes when the bus closes.
   */
  watch(channel: string): Observable<string>
  /**
   * Resolves once messages other nodes publish on a watched `channel` will reach its watchers (the backend
   * confirmed the subscription). A reader that answers "end of stored events" first must wait for this, or
   * an event published in between reaches nobody. Never rejects; may wait across a reconnect.
   */
  ready(channel: string): Promise<void>
  /**
   * Emits a watched channel's name when the backend lost its subscription involuntarily (the subscriber
   * connection dropped): messages published meanwhile by other nodes will never arrive. Watchers that promised
   * a gap-free feed must say so to their clients. The in-process bus never emits.
   */
  interruptions(): Observable<string>
  /** channels currently wanted (refcount > 0) */
  wanted(): string[]
  /** what reached this node from the backend for one channel, and the backend (un)subscriptions it made */
  stats(channel: string): ChannelStats
  close(): Promise<void>
}

export interface ChannelStats {
  /** messages that arrived from the backend, own echoes included: a node's ingress for this channel */
  received: number
  /** completed backend subscribes / unsubscribes: churn shows up here */
  subscribes: number
  unsubscribes: number
}

export type BusErrorCode = 'APIARY_BUS_UNAVAILABLE' | 'APIARY_BUS_CLOSED'

/** A backend outage (APIARY_BUS_UNAVAILABLE) or use after close (APIARY_BUS_CLOSED). */
export class BusError extends Error {
  constructor(
    readonly code: BusErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
    this.name = 'BusError'
  }
}

/**
 * Why 5 s: a client that drops and reconnects, or closes a REQ and opens a similar one, usually does so
 * within seconds; holding the backend subscription that long avoids SUBSCRIBE/UNSUBSCRIBE churn on Redis
 * for the price of a few seconds of ingress nobody reads.
 */
export const DEFAULT_UNSUBSCRIBE_DEBOUNCE_MS = 5_000

/** A node id travels in every envelope, ahead of a newline: it must be non-empty and contain none. */
export function checkNodeId(nodeId: string): void {
  if (typeof nodeId !== 'string' || nodeId.length === 0 || nodeId.includes('\n')) {
    throw new RangeError(`a bus nodeId is a non-empty string without newlines, got ${JSON.stringify(nodeId)}`)
  }
}
