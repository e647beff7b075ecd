import type { Subscription } from 'rxjs'
import type { Bus } from '../../infra/bus/bus.js'
import type { Logger } from '../../infra/log.js'
import type { Metrics } from '../../infra/metrics.js'
import { type CacheInvalidationOp, type ConnControlOp, type ControlChannel, toControlTemplate } from '../../protocols/control.js'
import type { NostrEvent } from '../../protocols/nip01/event.js'
import type { CommunityMsg } from './messages.js'

/**
 * A community's traffic with the other nodes (docs/architecture.md §6.7). Outgoing: accepted events, signed
 * control ops. Incoming: delivered into the community's mailbox as RemoteEvent / Control messages; a refused
 * tell (mailbox full, community down) is counted as lag, never blocks the bridge, and closes the local
 * subscriptions the event would have reached (onUndelivered). The events channel is watched only while
 * the community has local subscriptions, so a node's ingress follows its own interest.
 */
export interface CommunityLink {
  /** other nodes share this community: their events reach it through the bus */
  readonly clustered: boolean
  publishEvent(raw: string): void
  setInterest(wanted: boolean): void
  /** watch the events channel and wait (bounded) until other nodes' events will arrive; false: they won't yet */
  ensureInterest(): Promise<boolean>
  broadcast(channel: ControlChannel, op: ConnControlOp | CacheInvalidationOp): Promise<void>
  /**
   * who closes the subscriptions a remote event would have reached when the community could not take it
   * (`raw`), or every live subscription when it could not take an interruption (`undefined`)
   */
  onUndelivered(handler: (raw: string | undefined) => void): void
  close(): void
}

export interface CommunityLinkDeps {
  community: string
  bus: Bus
  clustered: boolean
  /** tells the community actor (resolved per message: a restarted actor keeps its path) */
  deliver: (msg: CommunityMsg) => boolean
  sign: (t: { kind: number; tags: string[][]; content: string }) => NostrEvent
  metrics: Metrics
  log: Logger
  /** a message the community could not take was skipped: reported as a 'lagged' supervision event */
  lagged: (skipped: number) => void
}

/** How long a first REQ waits for the events channel subscription before it is answered anyway. */
const READY_WAIT_MS = 1_000

export function createCommunityLink(d: CommunityLinkDeps): CommunityLink {
  const evChannel = d.bus.channelOf(d.community, 'events')
  let events: Subscription | undefined
  // the backend lost the events channel (the subscriber connection dropped): live subscriptions have a gap
  const interruptions = d.bus.interruptions().subscribe((channel) => {
    // the community can't take it (down, or full): its subscriptions are closed all the same
    if (channel === evChannel && !d.deliver({ type: 'LiveInterrupted' })) undelivered(undefined)
  })
  let undelivered: (raw: string | undefined) => void = () => {}
  const control = watchControl(d)
  return {
    clustered: d.clustered,
    publishEvent(raw) {
      d.bus.publish(evChannel, raw).catch((error: unknown) => {
        // best effort: the store has the event, REQs on other nodes will serve it
        d.log.warn({ err: error, community: d.community }, 'cross-node publish failed')
      })
    },
    setInterest(wanted) {
      if (wanted && !events) {
        events = d.bus.watch(evChannel).subscribe((raw) => {
          if (d.deliver({ type: 'RemoteEvent', raw })) return
          d.metrics.fanoutLag.inc()
          d.lagged(1)
          undelivered(raw)
        })
      } else if (!wanted && events) {
        events.unsubscribe()
        events = undefined
      }
    },
    async ensureInterest() {
      this.setInterest(true)
      return confirmed(d, evChannel)
    },
    async broadcast(channel, op) {
      await d.bus.publish(d.bus.channelOf(d.community, channel), JSON.stringify(d.sign(toControlTemplate(d.community, channel, op))))
    },
    onUndelivered(handler) {
      undelivered = handler
    },
    close() {
      interruptions.unsubscribe()
      events?.unsubscribe()
      for (const s of control) s.unsubscribe()
    },
  }
}

/** Both control topics, told into the community; one it cannot take is counted as lag (the backstops cover it). */
function watchControl(d: CommunityLinkDeps): Subscription[] {
  return (['conn-control', 'cache-invalidation'] as const).map((channel) =>
    d.bus.watch(d.bus.channelOf(d.community, channel)).subscribe((raw) => {
      if (d.deliver({ type: 'Control', channel, raw })) return
      const lag = channel === 'conn-control' ? d.metrics.connControlLag : d.metrics.cacheInvalidationLag
      lag.inc()
      d.lagged(1)
    }),
  )
}

/** Whether the bus confirms the events channel within READY_WAIT_MS. */
async function confirmed(d: CommunityLinkDeps, evChannel: string): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timedOut = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(true), READY_WAIT_MS)
  })
  // Redis down: don't hold the REQ hostage; the caller serves what is stored and says live is unavailable
  const late = await Promise.race([d.bus.ready(evChannel).then(() => false), timedOut])
  clearTimeout(timer)
  if (late) d.log.warn({ community: d.community }, 'events channel not confirmed in time; REQs get their stored page, then CLOSED')
  return !late
}
