import type { Redis } from 'ioredis'
import { type Observable, Subject } from 'rxjs'
import { err, ok, type Result } from '../../protocols/result.js'
import type { Logger } from '../log.js'
import { isCluster, type RedisClient } from '../redis/connect.js'
import { communityChannel } from '../redis/keys.js'
import { type Bus, BusError, type ChannelStats, type CommunityChannel, checkNodeId } from './bus.js'
import { BUS_MAC_CHARS, type BusMac } from './bus-mac.js'
import { ChannelWatchers } from './channel-watchers.js'
import { openSubscriber, type SubscriberSession } from './redis-subscriber.js'

/**
 * Redis pub/sub backend of the Bus (docs/architecture.md §6.7, §9). The split with the bus bridge actor
 * (src/actors/bridges/bus-bridge.ts): this object keeps the watcher refcounts, the Subjects and the
 * publisher; it never connects a subscriber on its own. The bridge owns the dedicated subscriber connection
 * through `link`: it opens it, (re)subscribes what `link.channels()` lists, and crashes when it drops, so the
 * kernel's backoff is the reconnect. Infra may not import actors (architecture §2), hence the link interface.
 */
export interface RedisBusOptions {
  /** the caller's command connection (one Redis or a cluster: PUBLISH reaches every node's subscribers),
   * connected before use (publish is refused unless it is ready); ioredis may reconnect it by itself; the
   * bus never closes it */
  publisher: RedisClient
  nodeId: string
  unsubscribeDebounceMs: number
  /** a fresh plain connection for each subscriber session, never a Cluster client (see subscriberConnector
   * in redis/connect.ts); see subscriberConnectionOptions */
  connectSubscriber: () => Redis
  /** signs what this node publishes and checks what it receives (bus-mac.ts): the cluster's shared key */
  mac: BusMac
  /** a received message dropped: no valid MAC, or no node id after it */
  onRejected?: (reason: BusRejection) => void
  log?: Pick<Logger, 'warn'>
}

export type BusRejection = 'mac' | 'malformed'

/** What the bridge actor needs from the bus to own its subscriber connection. */
export interface SubscriberLink {
  /** channels the subscription must cover: the wanted ones and those still within their unsubscribe debounce */
  channels(): string[]
  readonly closed: boolean
  /** called after channels() or closed changed; returns the unregister function */
  onChange(listener: () => void): () => void
  /** a new, ready subscriber connection whose messages go straight to the watchers (no mailbox hop) */
  open(onDown: (error: BusError) => void): Promise<SubscriberSession>
}

export interface RedisBus extends Bus {
  readonly link: SubscriberLink
  /** envelopes without a node id: foreign publishers on our channels (counted, dropped, logged) */
  readonly malformed: number
  /** envelopes whose MAC is not the cluster's: written into Redis by someone without the relay key */
  readonly forged: number
}

export function createRedisBus(opts: RedisBusOptions): RedisBus {
  checkNodeId(opts.nodeId)
  return new RedisPubSubBus(opts)
}

// `<mac><nodeId>\n<payload>`: the origin costs one concatenation and one indexOf, the payload (a raw event JSON)
// is never parsed or re-encoded on the way; the MAC (fixed length) covers the channel, the origin and the payload.
const SEPARATOR = '\n'
// a flood of forgeries is one log line per interval (with the count), the metric counts each
const REJECTION_LOG_INTERVAL_MS = 10_000

interface Outgoing {
  channel: string
  message: string
  resolve: () => void
  reject: (error: BusError) => void
}

class RedisPubSubBus implements RedisBus, SubscriberLink {
  readonly nodeId: string
  readonly link: SubscriberLink = this
  malformed = 0
  forged = 0
  closed = false
  private rejectedSinceLog = 0
  private lastRejectionLogMs = Number.NEGATIVE_INFINITY
  private readonly watchers: ChannelWatchers
  private readonly listeners = new Set<() => void>()
  /** channels the current subscriber connection has confirmed; emptied when it drops */
  private readonly live = new Set<string>()
  /** the session `live` is about: a replaced one's late answers and its close leave `live` alone */
  private current: object | undefined
  private readonly waiting = new Map<string, (() => void)[]>()
  private readonly lost = new Subject<string>()
  /** publishes of this turn, sent together by flush() */
  private outgoing: Outgoing[] = []
  /** the server this bus publishes to (see choosePublishTarget) */
  private target: Redis | undefined

  constructor(private readonly opts: RedisBusOptions) {
    this.nodeId = opts.nodeId
    this.watchers = new ChannelWatchers(opts.unsubscribeDebounceMs, {
      hold: () => this.changed(),
      release: () => this.changed(),
    })
  }

  channelOf(community: string, channel: CommunityChannel): string {
    return communityChannel(community, channel)
  }

  publish(channel: string, payload: string): Promise<void> {
    if (this.closed) return Promise.reject(new BusError('APIARY_BUS_CLOSED', 'the bus is closed'))
    const { publisher } = this.opts
    // Refused unless ready: ioredis would otherwise queue it through the outage and deliver stale events
    // late (or hold them in memory without bound). Best effort means: now, or an error now.
    if (publisher.status !== 'ready') {
      return Promise.reject(new BusError('APIARY_BUS_UNAVAILABLE', `redis publisher is ${publisher.status}`))
    }
    return new Promise((resolve, reject) => {
      if (this.outgoing.length === 0) setImmediate(() => this.flushGuarded())
      const body = this.nodeId + SEPARATOR + payload
      this.outgoing.push({ channel, message: this.opts.mac.sign(channel, body) + body, resolve, reject })
    })
  }

  /** A bug in flush must reject its batch, not leave the publishes pending or throw out of setImmediate. */
  private flushGuarded(): void {
    const batch = this.outgoing
    this.outgoing = []
    try {
      this.flush(batch)
    } catch (cause) {
      for (const entry of batch) entry.reject(new BusError('APIARY_BUS_UNAVAILABLE', 'redis publish failed', { cause }))
    }
  }

  /**
   * One turn's publishes leave in one pipeline: one socket write and one read on the Redis side instead of
   * one each per event (under ingest, per-PUBLISH socket writes cost the main thread and Redis a visible share
   * of their CPU).
   * A pipeline's commands run in order, and every pipeline goes to the same server, so a channel's messages
   * arrive in the order they were published.
   */
  private flush(batch: readonly Outgoing[]): void {
    const failed = (entry: Outgoing, cause: unknown) => {
      const detail = cause instanceof Error ? cause.message : String(cause)
      entry.reject(new BusError('APIARY_BUS_UNAVAILABLE', `redis publish failed (${detail})`, { cause }))
    }
    const target = choosePublishTarget(this.opts.publisher, this.target, this.nodeId)
    if (!target.ok) {
      for (const entry of batch) failed(entry, new Error(target.error))
      return
    }
    this.target = target.value
    const pipeline = target.value.pipeline()
    for (const entry of batch) pipeline.publish(entry.channel, entry.message)
    pipeline.exec().then(
      (results) => {
        for (const [i, entry] of batch.entries()) {
          const error = results?.[i]?.[0]
          if (error) failed(entry, error)
          else entry.resolve()
        }
      },
      (cause: unknown) => {
        for (const entry of batch) failed(entry, cause)
      },
    )
  }

  watch(channel: string): Observable<string> {
    return this.watchers.watch(channel)
  }

  interruptions(): Observable<string> {
    return this.lost.asObservable()
  }

  ready(channel: string): Promise<void> {
    if (this.live.has(channel) || this.closed) return Promise.resolve()
    return new Promise((resolve) => this.waiting.set(channel, [...(this.waiting.get(channel) ?? []), resolve]))
  }

  private confirm(channels: readonly string[]): void {
    for (const channel of channels) {
      this.live.add(channel)
      for (const resolve of this.waiting.get(channel) ?? []) resolve()
      this.waiting.delete(channel)
    }
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
    this.lost.complete()
    // nobody will confirm anything any more: readers stop waiting
    for (const resolves of this.waiting.values()) for (const resolve of resolves) resolve()
    this.waiting.clear()
    this.changed()
  }

  channels(): string[] {
    return this.closed ? [] : this.watchers.held()
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  async open(onDown: (error: BusError) => void): Promise<SubscriberSession> {
    if (this.closed) throw new BusError('APIARY_BUS_CLOSED', 'the bus is closed')
    const token = {}
    this.current = token
    this.live.clear()
    const isCurrent = () => this.current === token
    const session = await openSubscriber(this.opts.connectSubscriber(), {
      onMessage: (channel, raw) => this.ingest(channel, raw),
      onDown: (error) => {
        const interrupted = isCurrent() ? [...this.live] : []
        if (isCurrent()) this.live.clear()
        onDown(error)
        for (const channel of interrupted) this.lost.next(channel)
      },
    })
    return {
      subscribe: async (channels) => {
        await session.subscribe(channels)
        for (const channel of channels) this.watchers.count(channel, 'subscribes')
        if (isCurrent()) this.confirm(channels)
      },
      unsubscribe: async (channels) => {
        await session.unsubscribe(channels)
        for (const channel of channels) {
          this.watchers.count(channel, 'unsubscribes')
          if (isCurrent()) this.live.delete(channel)
        }
      },
      close: () => {
        if (isCurrent()) {
          this.live.clear()
          this.current = undefined
        }
        session.close()
      },
    }
  }

  private ingest(channel: string, raw: string): void {
    this.watchers.count(channel, 'received')
    const cut = raw.indexOf(SEPARATOR, BUS_MAC_CHARS)
    if (cut < 0) {
      this.malformed++
      this.rejected(channel, 'malformed')
      return
    }
    // own-echo suppression first (no MAC to check): compare the origin in place, without slicing it out
    if (cut === BUS_MAC_CHARS + this.nodeId.length && raw.startsWith(this.nodeId, BUS_MAC_CHARS)) return
    if (!this.opts.mac.verify(channel, raw.slice(BUS_MAC_CHARS), raw.slice(0, BUS_MAC_CHARS))) {
      this.forged++
      this.rejected(channel, 'mac')
      return
    }
    this.watchers.deliver(channel, raw.slice(cut + 1))
  }

  private rejected(channel: string, reason: BusRejection): void {
    this.opts.onRejected?.(reason)
    this.rejectedSinceLog++
    const now = performance.now()
    if (now - this.lastRejectionLogMs < REJECTION_LOG_INTERVAL_MS) return
    this.opts.log?.warn({ channel, reason, dropped: this.rejectedSinceLog }, 'bus messages dropped: not from a node of this cluster')
    this.rejectedSinceLog = 0
    this.lastRejectionLogMs = now
  }

  private changed(): void {
    for (const listener of [...this.listeners]) {
      try {
        listener()
      } catch (error) {
        this.opts.log?.warn({ err: error }, 'bus link listener threw')
      }
    }
  }
}

/**
 * Where PUBLISH goes. A Redis Cluster broadcasts PUBLISH from any master to every node, but ioredis sends a
 * command without keys to a random node each time, so two messages of one channel could overtake each other
 * on the cluster bus: every publish goes to one master instead, kept while it is ready (`previous`). A new
 * choice takes the ready masters in address order from a place given by this node's id, so the relay nodes
 * spread over the masters and do not all move to one when one goes; failing a ready one, a master not yet
 * connected (the cluster's node connections are lazy: it connects on this first command). Messages of one
 * channel can still overtake each other around a switch (a batch in flight on the old master).
 */
function choosePublishTarget(publisher: RedisClient, previous: Redis | undefined, nodeId: string): Result<Redis, string> {
  if (!isCluster(publisher)) return publisher.status === 'ready' ? ok(publisher) : err(`redis publisher is ${publisher.status}`)
  if (publisher.status !== 'ready') return err(`redis cluster client is ${publisher.status}`)
  const masters = publisher.nodes('master')
  if (previous?.status === 'ready' && masters.includes(previous)) return ok(previous)
  const address = (n: Redis) => `${n.options.host}:${n.options.port}`
  masters.sort((x, y) => (address(x) < address(y) ? -1 : address(x) > address(y) ? 1 : 0))
  const ready = masters.filter((n) => n.status === 'ready')
  const next = ready[spreadIndex(nodeId, ready.length)] ?? masters.find((n) => n.status === 'wait')
  return next ? ok(next) : err('no redis cluster master is ready')
}

/** A place in [0, n) that depends only on `nodeId` (FNV-1a): different nodes start at different masters. */
function spreadIndex(nodeId: string, n: number): number {
  let h = 0x811c9dc5
  for (let i = 0; i < nodeId.length; i++) h = Math.imul(h ^ nodeId.charCodeAt(i), 0x01000193)
  return n === 0 ? 0 : (h >>> 0) % n
}
