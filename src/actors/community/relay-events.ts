// The relay's own events a community delivers besides its writers': channel state (39000–39002, published
// beside the actor, at once or when the clock allows), the events a mesh channel owner on this node stored,
// and the agent registry's arrivals and departures. Each is delivered here and published to the other nodes.
import { pipeTo } from '../kernel/index.js'
import { publishState, type RelayEvent } from './community-channels.js'
import type { CommunityDeps, CommunityState, CommunitySurvivors, Ctx } from './community-state.js'
import { type CommunityMsg, REDELIVER } from './messages.js'
import { effectDone, lostEvents } from './write-effects.js'

type Msg<T extends CommunityMsg['type']> = Extract<CommunityMsg, { type: T }>

/** Delivered here and to the other nodes like any accepted event. */
export function announce(state: Pick<CommunityState, 'feed'>, events: RelayEvent[], deps: CommunityDeps): void {
  for (const c of events) {
    state.feed.offer(c.event, c.raw)
    deps.cluster.link.publishEvent(c.raw)
  }
}

export function onAnnounce(state: CommunityState, msg: Msg<'Announce'>, deps: CommunityDeps): CommunityState {
  if (msg.from === 'channel-state' || msg.from === 'member-list') effectDone(state)
  // stored by this node's channel owner, the writer's event among them: a resend is a duplicate
  if (msg.from === 'mesh') for (const e of msg.events) state.recent.add(e.event.id)
  announce(state, msg.events, deps)
  return state
}

/** Publish a channel's state now, beside the actor; what it stored comes back as an Announce. */
export function onPublishChannelState(
  state: CommunityState,
  msg: Msg<'PublishChannelState'>,
  ctx: Ctx,
  deps: CommunityDeps,
): CommunityState {
  const out: RelayEvent[] = []
  const published = publishState(state.channels, msg.channel, out, msg.what).then(
    () => out,
    (error: unknown) => {
      deps.log.error({ err: error, community: deps.record.id, channel: msg.channel }, 'channel state not published')
      return out
    },
  )
  state.inflight.effects++
  pipeTo(ctx.self, published, (o): CommunityMsg => ({ type: 'Announce', events: o.ok ? o.value : [], from: 'channel-state' }), {
    ...REDELIVER,
    onGiveUp: (m) => lostAnnounce(state, m, deps),
  })
  return state
}

/** Relay events that never reached their community: delivered to the other nodes, closed here. */
export function lostAnnounce(state: Pick<CommunitySurvivors, 'index' | 'inflight'>, msg: CommunityMsg, deps: CommunityDeps): void {
  if (msg.type !== 'Announce') return
  if (msg.from === 'channel-state' || msg.from === 'member-list') effectDone(state)
  lostEvents(state, msg.events, deps)
}
