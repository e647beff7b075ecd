import type { Subscription } from 'rxjs'
import type { Bus } from '../../infra/bus/bus.js'
import type { Logger } from '../../infra/log.js'
import type { Metrics } from '../../infra/metrics.js'
import { type CacheInvalidationOp, type ConnControlOp, type ControlChannel, toControlTemplate } from '../../protocols/control.js'
import type { NostrEvent } from '../../protocols/nip01/event.js'
import { createLagBridge, type Lag, type LagBridge } from '../kernel/index.js'
import type { CommunityMsg, LinkStream } from './messages.js'

/**
 * A community's traffic with the other nodes (docs/architecture.md §6.7). Outgoing: accepted events, signed
 * control ops. Incoming: delivered into the community's mailbox as RemoteEvent / Control messages through a
 * lag bridge per stream: what the community cannot take (mailbox full, down) is counted, never blocks the
 * bus, and reaches the community as one `Lagged` as soon as it has room, which it acts on (closing the
 * subscriptions a lost event would have reached, dropping caches a lost invalidation may have left stale,
 * re-checking bans a lost disconnect order may have missed). A lag never taken goes to `onLagLost`. The
 * events channel is watched only while the community has local subscriptions, so a node's ingress follows
 * its own interest.
 */
export interface CommunityLink {
  /** other nodes share this community: their events reach it through the bus */
  readonly clustered: boolean
  publishEvent(raw: string): void
  setInterest(wanted: boolean): void
  /** watch the events channel and wait (bounded) until other nodes' events will arrive; false: they won't yet */
  ensureInterest(): Promise<boolean>
  broadcast(channel: ControlChannel, op: ConnControlOp | CacheInvalidationOp): Promise<void>
  /** who acts on a lag the community never took (down or full for a minute): the subscriptions must still hear of it */
  onLagLost(handler: (stream: LinkStream, lag: Lag<string>) => void): void
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
  /** the community stopped for good (its link closed): the reporting behind `lagged` ends too */
  closed?: () => void
}

/** How long a first REQ waits for the events channel subscription before it is answered anyway. */
const READY_WAIT_MS = 1_000

export function createCommunityLink(d: CommunityLinkDeps): CommunityLink {
  const evChannel = d.bus.channelOf(d.community, 'events')
  let lagLost: (stream: LinkStream, lag: Lag<string>) => void = () => {}
  const bridges = {
    events: bridgeOf(
      d,
      'events',
      (raw) => ({ type: 'RemoteEvent', raw }),
      (lag) => lagLost('events', lag),
    ),
    'conn-control': bridgeOf(
      d,
      'conn-control',
      (raw) => ({ type: 'Control', channel: 'conn-control', raw }),
      (lag) => lagLost('conn-control', lag),
    ),
    'cache-invalidation': bridgeOf(
      d,
      'cache-invalidation',
      (raw) => ({ type: 'Control', channel: 'cache-invalidation', raw }),
      (lag) => lagLost('cache-invalidation', lag),
    ),
  }
  let events: Subscription | undefined
  // the backend lost the events channel (the subscriber connection dropped): live subscriptions have a gap
  const interruptions = d.bus.interruptions().subscribe((channel) => {
    if (channel === evChannel) bridges.events.interrupt()
  })
  const control = (['conn-control', 'cache-invalidation'] as const).map((channel) =>
    d.bus.watch(d.bus.channelOf(d.community, channel)).subscribe((raw) => bridges[channel].push(raw)),
  )
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
        events = d.bus.watch(evChannel).subscribe((raw) => bridges.events.push(raw))
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
    onLagLost(handler) {
      lagLost = handler
    },
    close() {
      interruptions.unsubscribe()
      events?.unsubscribe()
      for (const s of control) s.unsubscribe()
      for (const bridge of Object.values(bridges)) bridge.dispose()
      d.closed?.()
    },
  }
}

/** One stream into the community: each skip counted (its metric, a 'lagged' event), the lag told as `Lagged`. */
function bridgeOf(
  d: CommunityLinkDeps,
  stream: LinkStream,
  toMsg: (raw: string) => CommunityMsg,
  onGiveUp: (lag: Lag<string>) => void,
): LagBridge<string> {
  const metric = {
    events: d.metrics.fanoutLag,
    'conn-control': d.metrics.connControlLag,
    'cache-invalidation': d.metrics.cacheInvalidationLag,
  }[stream]
  return createLagBridge<string>({
    tell: (raw) => d.deliver(toMsg(raw)),
    tellLag: (lag) => d.deliver({ type: 'Lagged', stream, lag: { ...lag, missed: [...lag.missed] } }),
    counted: (skipped) => {
      metric.inc(skipped)
      d.lagged(skipped)
    },
    onGiveUp,
  })
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
