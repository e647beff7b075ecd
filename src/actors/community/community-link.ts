import type { Subscription } from 'rxjs'
import type { Bus } from '../../infra/bus/bus.js'
import type { Logger } from '../../infra/log.js'
import type { Metrics } from '../../infra/metrics.js'
import { cacheInvalidationChannel, connControlChannel, eventsChannel } from '../../infra/redis/keys.js'
import { type CacheInvalidationOp, type ConnControlOp, type ControlChannel, toControlTemplate } from '../../protocols/control.js'
import type { NostrEvent } from '../../protocols/nip01/event.js'
import type { CommunityMsg } from './messages.js'

/**
 * A community's traffic with the other nodes (DESIGN §5 "Cross-node"). Outgoing: accepted events, signed
 * control ops. Incoming: delivered into the community's mailbox as RemoteEvent / Control messages; a refused
 * tell (mailbox full) is counted as lag, never blocks the bridge. The events channel is watched only while
 * the community has local subscriptions, so a node's ingress follows its own interest.
 */
export interface CommunityLink {
  publishEvent(raw: string): void
  setInterest(wanted: boolean): void
  /** watch the events channel and wait (bounded) until other nodes' events will arrive */
  ensureInterest(): Promise<void>
  broadcast(channel: ControlChannel, op: ConnControlOp | CacheInvalidationOp): Promise<void>
  close(): void
}

export interface CommunityLinkDeps {
  community: string
  bus: Bus
  /** tells the community actor (resolved per message: a restarted actor keeps its path) */
  deliver: (msg: CommunityMsg) => boolean
  sign: (t: { kind: number; tags: string[][]; content: string }) => NostrEvent
  metrics: Metrics
  log: Logger
}

/** How long a first REQ waits for the events channel subscription before it is answered anyway. */
const READY_WAIT_MS = 1_000

export function createCommunityLink(d: CommunityLinkDeps): CommunityLink {
  const evChannel = eventsChannel(d.community)
  let events: Subscription | undefined
  const control = (['conn-control', 'cache-invalidation'] as const).map((channel) => {
    const name = channel === 'conn-control' ? connControlChannel(d.community) : cacheInvalidationChannel(d.community)
    return d.bus.watch(name).subscribe((raw) => {
      if (!d.deliver({ type: 'Control', channel, raw })) {
        const lag = channel === 'conn-control' ? d.metrics.connControlLag : d.metrics.cacheInvalidationLag
        lag.inc()
      }
    })
  })
  return {
    publishEvent(raw) {
      d.bus.publish(evChannel, raw).catch((error: unknown) => {
        // best effort: the store has the event, REQs on other nodes will serve it
        d.log.warn({ err: error, community: d.community }, 'cross-node publish failed')
      })
    },
    setInterest(wanted) {
      if (wanted && !events) {
        events = d.bus.watch(evChannel).subscribe((raw) => {
          if (!d.deliver({ type: 'RemoteEvent', raw })) d.metrics.fanoutLag.inc()
        })
      } else if (!wanted && events) {
        events.unsubscribe()
        events = undefined
      }
    },
    async ensureInterest() {
      this.setInterest(true)
      let timer: ReturnType<typeof setTimeout> | undefined
      const timedOut = new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), READY_WAIT_MS)
      })
      // Redis down: don't hold the REQ hostage; serve what is stored and log that live may lag
      if (await Promise.race([d.bus.ready(evChannel).then(() => false), timedOut]))
        d.log.warn({ community: d.community }, 'events channel not confirmed in time; live events from other nodes may lag')
      clearTimeout(timer)
    },
    async broadcast(channel, op) {
      const name = channel === 'conn-control' ? connControlChannel(d.community) : cacheInvalidationChannel(d.community)
      await d.bus.publish(name, JSON.stringify(d.sign(toControlTemplate(d.community, channel, op))))
    },
    close() {
      events?.unsubscribe()
      for (const s of control) s.unsubscribe()
    },
  }
}
