import { Observable, Subject } from 'rxjs'
import type { ChannelStats } from './bus.js'

/** What a backend does when the set of channels it must be subscribed to changes. */
export interface BackendHooks {
  hold(channel: string): void
  release(channel: string): void
}

interface Entry {
  readonly subject: Subject<string>
  refs: number
  releaseTimer: ReturnType<typeof setTimeout> | undefined
}

/**
 * The part every Bus backend shares: watcher refcounts per channel, one Subject per channel, the debounced
 * release of the backend subscription, and the per-channel counters. A channel is *held* (the backend must
 * stay subscribed) while it is wanted or within its unsubscribe debounce.
 */
export class ChannelWatchers {
  private readonly entries = new Map<string, Entry>()
  private readonly counters = new Map<string, ChannelStats>()
  private closed = false

  constructor(
    private readonly unsubscribeDebounceMs: number,
    private readonly hooks: BackendHooks,
  ) {
    if (!(unsubscribeDebounceMs >= 0)) throw new RangeError(`unsubscribeDebounceMs must be >= 0, got ${unsubscribeDebounceMs}`)
  }

  watch(channel: string): Observable<string> {
    return new Observable<string>((subscriber) => {
      if (this.closed) {
        subscriber.complete()
        return
      }
      const entry = this.acquire(channel)
      const inner = entry.subject.subscribe(subscriber)
      return () => {
        inner.unsubscribe()
        this.release(channel, entry)
      }
    })
  }

  wanted(): string[] {
    return [...this.entries].filter(([, entry]) => entry.refs > 0).map(([channel]) => channel)
  }

  held(): string[] {
    return [...this.entries.keys()]
  }

  isHeld(channel: string): boolean {
    return this.entries.has(channel)
  }

  deliver(channel: string, payload: string): void {
    this.entries.get(channel)?.subject.next(payload)
  }

  count(channel: string, what: keyof ChannelStats, n = 1): void {
    let stats = this.counters.get(channel)
    if (stats === undefined) {
      stats = { received: 0, subscribes: 0, unsubscribes: 0 }
      this.counters.set(channel, stats)
    }
    stats[what] += n
  }

  stats(channel: string): ChannelStats {
    return { received: 0, subscribes: 0, unsubscribes: 0, ...this.counters.get(channel) }
  }

  /** watchers see complete; the backend is released by its owner's close, not channel by channel */
  close(): void {
    this.closed = true
    const entries = [...this.entries.values()]
    this.entries.clear()
    for (const entry of entries) {
      clearTimeout(entry.releaseTimer)
      entry.subject.complete()
    }
  }

  private acquire(channel: string): Entry {
    let entry = this.entries.get(channel)
    if (entry === undefined) {
      entry = { subject: new Subject<string>(), refs: 0, releaseTimer: undefined }
      this.entries.set(channel, entry)
      this.hooks.hold(channel)
    }
    // a resubscribe within the debounce keeps the backend subscription: no UNSUBSCRIBE/SUBSCRIBE pair
    clearTimeout(entry.releaseTimer)
    entry.releaseTimer = undefined
    entry.refs++
    return entry
  }

  private release(channel: string, entry: Entry): void {
    entry.refs--
    if (entry.refs > 0 || this.closed || this.entries.get(channel) !== entry) return
    if (this.unsubscribeDebounceMs === 0) {
      this.drop(channel, entry)
      return
    }
    entry.releaseTimer = setTimeout(() => this.drop(channel, entry), this.unsubscribeDebounceMs)
    // a pending release must not keep the process alive
    entry.releaseTimer.unref?.()
  }

  private drop(channel: string, entry: Entry): void {
    entry.releaseTimer = undefined
    if (entry.refs > 0 || this.entries.get(channel) !== entry) return
    this.entries.delete(channel)
    this.hooks.release(channel)
  }
}
