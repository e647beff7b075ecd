// Signed control payloads between the nodes of a community (docs/control-messages.md): verified beside the
// actor when they come from the bus, each turned into the message it asks for (a disconnect, a cache drop);
// and this node's own ops broadcast to the others, best effort.
import { type CacheInvalidationOp, type ConnControlOp, type ControlChannel, parseControlEvent } from '../../protocols/control.js'
import type { NostrEvent } from '../../protocols/nip01/event.js'
import { tellUntilTaken } from '../kernel/index.js'
import type { ClusterDeps, CommunityDeps, CommunityState, Ctx } from './community-state.js'
import { CONTROL_MAX_AGE_SECONDS, type ControlReplayMemory } from './control-replay.js'
import { type CommunityMsg, REDELIVER } from './messages.js'

type Msg<T extends CommunityMsg['type']> = Extract<CommunityMsg, { type: T }>
type ControlOp = ConnControlOp | CacheInvalidationOp

/** A payload from the bus: verified beside the actor; the op it carries comes back as its own message. */
export function onControl(state: CommunityState, msg: Msg<'Control'>, ctx: Ctx, deps: CommunityDeps): CommunityState {
  acceptControl(msg, deps.record.id, deps.cluster, state.replays).then(
    (op) => {
      if (!op) return
      // an archive, a new community or a roster change on another node: re-read the community list now
      // rather than at the next revalidation
      if (op.op === 'DisconnectCommunity' || op.op === 'InvalidateAll') deps.cluster.revalidate()
      // a DisconnectIp is a blockip, an InvalidateBlockedIps an unblockip: the list is read again at the next check
      if (op.op === 'DisconnectIp' || op.op === 'InvalidateBlockedIps') deps.cluster.blockListChanged()
      tellUntilTaken(ctx.self, toLocalMessage(op), {
        ...REDELIVER,
        // the backstops cover it: the ban row at every AUTH and write, the caches' TTL, revalidation
        onGiveUp: () => deps.log.warn({ community: deps.record.id, op: op.op }, 'a control payload never reached its community'),
      })
    },
    (error: unknown) => deps.log.error({ err: error, community: deps.record.id }, 'control payload check failed'),
  )
  return state
}

/** Verify a control payload and return the op it carries; log, count and skip anything else. */
async function acceptControl(msg: Msg<'Control'>, community: string, d: ClusterDeps, replays: ControlReplayMemory) {
  let e: NostrEvent
  try {
    e = JSON.parse(msg.raw) as NostrEvent
  } catch {
    d.rejected('json')
    return undefined
  }
  if ((await d.verifier.verify(e).catch(() => 'bad-sig')) !== 'ok') {
    d.log.warn({ community, channel: msg.channel }, 'control payload with a bad signature skipped')
    d.rejected('signature')
    return undefined
  }
  const op = parseControlEvent(e, {
    relayPubkey: d.relayPubkey,
    community,
    channel: msg.channel,
    nowSeconds: d.nowSeconds(),
    maxAgeSeconds: CONTROL_MAX_AGE_SECONDS,
  })
  if (!op.ok) {
    d.log.warn({ community, channel: msg.channel, why: op.error }, 'control payload skipped')
    d.rejected(op.error)
    return undefined
  }
  // only conn-control is imperative: a cache invalidation is idempotent, and two identical ones within a
  // second (same content, same created_at: the same id) are both due after two changes in that second
  if (msg.channel === 'conn-control' && !replays.claim(e.id, e.created_at, d.nowSeconds())) {
    d.log.warn({ community, channel: msg.channel, id: e.id }, 'replayed control payload skipped')
    d.rejected('replayed')
    return undefined
  }
  return op.value
}

/** An op from the bus, applied on this node only: never broadcast again. */
function toLocalMessage(op: ControlOp): CommunityMsg {
  if (op.op === 'DisconnectPubkey') return { type: 'DisconnectPubkey', pubkey: op.pubkey, reason: op.reason, broadcast: false }
  if (op.op === 'DisconnectIp') return { type: 'DisconnectIp', range: op.range, reason: op.reason, broadcast: false }
  if (op.op === 'DisconnectCommunity') return { type: 'DisconnectCommunity', reason: op.reason, broadcast: false }
  return { type: 'InvalidateCache', op, broadcast: false }
}

export function onInvalidateCache(state: CommunityState, msg: Msg<'InvalidateCache'>, deps: CommunityDeps): CommunityState {
  state.gate.invalidate(msg.op)
  if (msg.broadcast) void broadcastLogged(deps, 'cache-invalidation', msg.op)
  return state
}

/**
 * Best effort: a lost conn-control broadcast is covered by the ban row checked at AUTH and at every write, a
 * lost cache invalidation by the caches' TTL (docs/architecture.md §6.7).
 */
export async function broadcastLogged(
  deps: Pick<CommunityDeps, 'cluster' | 'log' | 'record'>,
  channel: ControlChannel,
  op: ControlOp,
): Promise<void> {
  await deps.cluster.link.broadcast(channel, op).catch((error: unknown) => {
    deps.log.warn({ err: error, community: deps.record.id }, `${channel} broadcast failed`)
  })
}
