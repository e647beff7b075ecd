// A live view of the agents offering one capability: discover() kept current by three subscriptions —
// announcements (arrivals), heartbeats of the agents announced (lease renewals), and the relay's kind 21990
// departures — plus the lease's own end, checked on a timer, for a relay that sends no departure.
import type { NostrEvent } from '../../protocols/nip01/event.js'
import type { AgentClock, TimerHandle } from './clock.js'
import { type DiscoveredAgent, KIND_ANNOUNCEMENT, KIND_DEPARTURE, KIND_PRESENCE, toDiscovered } from './registry-wire.js'
import type { WireFilter } from './wire-filter.js'

export interface WatchDeps {
  subscribe(filters: WireFilter[], onEvent: (e: NostrEvent) => void): () => void
  leaseSeconds(): number
  clock: AgentClock
  /** how often leases are re-checked */
  tickMs: number
}

/** Calls `onChange` with the whole live list whenever it changes; returns the function that ends the watch. */
export function watchCapability(capability: string, onChange: (agents: DiscoveredAgent[]) => void, deps: WatchDeps): () => void {
  const announcements = new Map<string, NostrEvent>()
  const heartbeats = new Map<string, NostrEvent>()
  let unsubscribeAuthors: (() => void) | undefined
  let watchedAuthors = ''
  // nothing is news until an agent shows up
  let last = '[]'
  let timer: TimerHandle | undefined
  let ended = false

  const emit = () => {
    const live = toDiscovered([...announcements.values()], [...heartbeats.values()], deps.leaseSeconds(), deps.clock.now())
    live.sort((a, b) => (a.pubkey < b.pubkey ? -1 : 1))
    const key = JSON.stringify(live.map((a) => [a.pubkey, a.capabilities, a.version, a.load, a.leaseExpiresAt]))
    if (key === last) return
    last = key
    onChange(live)
  }
  // the heartbeat and departure filters name the announced authors: re-sent when that set changes
  const followAuthors = () => {
    const authors = [...announcements.keys()].sort()
    if (authors.join() === watchedAuthors) return
    watchedAuthors = authors.join()
    unsubscribeAuthors?.()
    unsubscribeAuthors = undefined
    if (authors.length === 0) return
    unsubscribeAuthors = deps.subscribe(
      [
        { kinds: [KIND_PRESENCE], authors },
        { kinds: [KIND_DEPARTURE], '#p': authors },
      ],
      onAuthorEvent,
    )
  }
  const onAnnouncement = (e: NostrEvent) => {
    const had = announcements.get(e.pubkey)
    if (had && had.created_at > e.created_at) return
    announcements.set(e.pubkey, e)
    followAuthors()
    emit()
  }
  const onAuthorEvent = (e: NostrEvent) => {
    if (e.kind === KIND_PRESENCE) {
      const had = heartbeats.get(e.pubkey)
      if (!had || had.created_at <= e.created_at) heartbeats.set(e.pubkey, e)
    } else {
      // relay-signed: the agent is the `p` tag; it comes back with its next heartbeat
      const agent = e.tags.find((t) => t[0] === 'p')?.[1]
      if (agent !== undefined) heartbeats.delete(agent)
    }
    emit()
  }
  const tick = () => {
    if (ended) return
    emit()
    timer = deps.clock.setTimeout(tick, deps.tickMs)
  }

  const unsubscribeAnnouncements = deps.subscribe([{ kinds: [KIND_ANNOUNCEMENT], '#c': [capability] }], onAnnouncement)
  timer = deps.clock.setTimeout(tick, deps.tickMs)
  return () => {
    ended = true
    if (timer !== undefined) deps.clock.clearTimeout(timer)
    unsubscribeAnnouncements()
    unsubscribeAuthors?.()
  }
}
