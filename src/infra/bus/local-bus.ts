import { NEVER, type Observable } from 'rxjs'
import { isCommunityId } from '../../protocols/ids.js'
import { type Bus, BusError, type ChannelStats, type CommunityChannel, checkNodeId, DEFAULT_UNSUBSCRIBE_DEBOUNCE_MS } from './bus.js'
import { ChannelWatchers } from './channel-watchers.js'

type Receiver = (origin: string, payload: string) => void

/**
 * The in-process stand-in for a Redis server: the LocalBus instances sharing one hub are the nodes of an
 * in-process cluster (two relays in one test without Redis). A message reaches the buses subscribed to its
 * channel at publish time, as a Redis PUBLISH does.
 */
export class LocalHub {
  private readonly receivers = new Map<string, Set<Receiver>>()

  join(channel: string, receiver: Receiver): void {
    let set = this.receivers.get(channel)
    if (set === undefined) {
      set = new Set()
      this.receivers.set(channel, set)
    }
    set.add(receiver)
  }

  leave(channel: string, receiver: Receiver): void {
    const set = this.receivers.get(channel)
    if (set?.delete(receiver) && set.size === 0) this.receivers.delete(channel)
  }

  /** like PUBSUB NUMSUB: how many buses are subscribed to channel */
  subscribers(channel: string): number {
    return this.receivers.get(channel)?.size ?? 0
  }

  publish(channel: string, origin: string, payload: string): void {
    const set = this.receivers.get(channel)
    if (set === undefined) return
    const targets = [...set]
    // Delivered on a later microtask, as from a socket: a watcher that publishes from its callback must not
    // re-enter the bus, and publish resolves before anyone receives (same order of things as Redis).
    queueMicrotask(() => {
      for (const receive of targets) receive(origin, payload)
    })
  }
}

export function createLocalHub(): LocalHub {
  return new LocalHub()
}

export interface LocalBusOptions {
  nodeId: string
  /** buses on the same hub reach each other; without one, the bus is a single node (it hears nobody) */
  hub?: LocalHub
  unsubscribeDebounceMs?: number
}

export function createLocalBus(opts: LocalBusOptions): Bus {
  checkNodeId(opts.nodeId)
  return new LocalBus(opts.nodeId, opts.hub ?? createLocalHub(), opts.unsubscribeDebounceMs ?? DEFAULT_UNSUBSCRIBE_DEBOUNCE_MS)
}

class LocalBus implements Bus {
  private readonly watchers: ChannelWatchers
  private readonly receivers = new Map<string, Receiver>()
  private closed = false

  constructor(
    readonly nodeId: string,
    private readonly hub: LocalHub,
    unsubscribeDebounceMs: number,
  ) {
    this.watchers = new ChannelWatchers(unsubscribeDebounceMs, {
      hold: (channel) => this.join(channel),
      release: (channel) => this.leave(channel),
    })
  }

  /** Its own names: an in-process hub shares no namespace with Redis. */
  channelOf(community: string, channel: CommunityChannel): string {
    if (!isCommunityId(community)) throw new RangeError(`not a community id: ${JSON.stringify(community.slice(0, 80))}`)
    return `${community}/${channel}`
  }

  async publish(channel: string, payload: string): Promise<void> {
    if (this.closed) throw new BusError('APIARY_BUS_CLOSED', 'the bus is closed')
    this.hub.publish(channel, this.nodeId, payload)
  }

  interruptions(): Observable<string> {
    // in-process delivery is synchronous: nothing is ever lost on the way
    return NEVER
  }

  watch(channel: string): Observable<string> {
    return this.watchers.watch(channel)
  }

  /** in-process: a watch is live the moment it exists */
  ready(_channel: string): Promise<void> {
    return Promise.resolve()
  }

  wanted(): string[] {
    return this.watchers.wanted()
  }

  stats(channel: string): ChannelStats {
    return this.watchers.stats(channel)
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.watchers.close()
    for (const [channel, receiver] of this.receivers) this.hub.leave(channel, receiver)
    this.receivers.clear()
  }

  private join(channel: string): void {
    const receiver: Receiver = (origin, payload) => {
      this.watchers.count(channel, 'received')
      if (origin !== this.nodeId) this.watchers.deliver(channel, payload)
    }
    this.receivers.set(channel, receiver)
    this.hub.join(channel, receiver)
    this.watchers.count(channel, 'subscribes')
  }

  private leave(channel: string): void {
    const receiver = this.receivers.get(channel)
    if (receiver === undefined) return
    this.receivers.delete(channel)
    this.hub.leave(channel, receiver)
    this.watchers.count(channel, 'unsubscribes')
  }
}
