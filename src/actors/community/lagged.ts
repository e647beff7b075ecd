// What a community does when it hears it missed part of a stream from the bus (community-link.ts): every
// loss has a consequence someone sees or a backstop that covers it (docs/architecture.md §10), decided here
// rather than left to counters. Lost events close the subscriptions they would have reached; a lost cache
// invalidation drops every cache it could have touched; a lost disconnect order re-checks the bans of every
// pubkey connected here.
import { parseEventShape } from '../../protocols/nip01/event.js'
import { type Lag, tellUntilTaken } from '../kernel/index.js'
import type { CommunityDeps, CommunityState, CommunitySurvivors, Ctx } from './community-state.js'
import { loseAll, loseMatching } from './live-feed.js'
import { type CommunityMsg, type LinkStream, REDELIVER } from './messages.js'
import { LIVE_INTERRUPTED, REMOTE_UNDELIVERED } from './remote-events.js'

type LaggedMsg = Extract<CommunityMsg, { type: 'Lagged' }>

export function onLagged(state: CommunityState, msg: LaggedMsg, ctx: Ctx, deps: CommunityDeps): CommunityState {
  deps.log.warn(
    { community: deps.record.id, stream: msg.stream, skipped: msg.lag.skipped, interrupted: msg.lag.interrupted },
    'missed part of a stream from the other nodes',
  )
  if (msg.stream === 'conn-control') {
    deps.metrics.lagsActedOn.inc({ stream: msg.stream })
    recheckBans(state, ctx, deps)
  } else actOnLag(state, msg.stream, msg.lag, deps)
  // a lost archive order, roster change or new community: re-read the community list now, as those ops do
  if (msg.stream !== 'events') deps.cluster.revalidate()
  return state
}

/**
 * What needs no actor: closing subscriptions and dropping caches act on what survives the actor, so a lag the
 * community never took (down or full for a minute) is acted on all the same. A lost disconnect order then rests on the
 * ban row, read at every AUTH and every write.
 */
export function actOnLag(s: CommunitySurvivors, stream: LinkStream, lag: Lag<string>, deps: CommunityDeps): void {
  deps.metrics.lagsActedOn.inc({ stream })
  switch (stream) {
    case 'events':
      deps.lagged(closeMissed(s, lag))
      return
    case 'cache-invalidation':
      s.gate.invalidate({ op: 'InvalidateAll' })
      deps.cluster.blockListChanged()
      return
    case 'conn-control':
      // a lost DisconnectIp was a blockip: the block list is read again, so the range's next socket is refused
      deps.cluster.blockListChanged()
      deps.log.warn(
        { community: deps.record.id, skipped: lag.skipped },
        'disconnect orders lost: bans take effect at the next AUTH or write',
      )
      return
  }
}

/** The subscriptions the missed events would have reached, or every one when what was missed is not known. */
function closeMissed(s: CommunitySurvivors, lag: Lag<string>): number {
  if (lag.interrupted) return loseAll(s.index, LIVE_INTERRUPTED)
  if (!lag.complete) return loseAll(s.index, REMOTE_UNDELIVERED)
  let closed = 0
  for (const raw of lag.missed) {
    const event = parseEventShape(raw)
    if (event) closed += loseMatching(s.index, event, REMOTE_UNDELIVERED)
  }
  return closed
}

/** Every pubkey connected here (agents' owners too) against the ban rows, beside the actor; a banned one is disconnected. */
function recheckBans(state: CommunityState, ctx: Ctx, deps: CommunityDeps): void {
  const pubkeys = new Set<string>()
  for (const conn of state.conns.values()) {
    for (const pubkey of conn.authed) pubkeys.add(pubkey)
    for (const owner of conn.owners.values()) pubkeys.add(owner)
  }
  if (pubkeys.size === 0) return
  deps.communities.bannedAmong(deps.record.id, [...pubkeys], deps.nowSeconds()).then(
    (banned) => {
      for (const [pubkey, ban] of banned) {
        tellUntilTaken(
          ctx.self,
          { type: 'DisconnectPubkey', pubkey, reason: ban.reason, broadcast: false },
          {
            ...REDELIVER,
            // the ban row still refuses its every write and AUTH
            onGiveUp: () =>
              deps.log.warn({ community: deps.record.id, pubkey }, 'a banned connection found after lost disconnect orders stayed open'),
          },
        )
      }
    },
    (error: unknown) => deps.log.error({ err: error, community: deps.record.id }, 'ban re-check after lost disconnect orders failed'),
  )
}
