import { type ConnControlOp, parseControlEvent } from '../../protocols/control.js'
import { type NostrEvent, parseEventShape } from '../../protocols/nip01/event.js'
import { noticeFrame } from '../../protocols/nip01/relay-message.js'
import { isExpired } from '../../protocols/nip40.js'
import { reason } from '../../protocols/reasons.js'
import type { ClusterDeps } from './community-state.js'
import { CONTROL_MAX_AGE_SECONDS, type ControlReplayMemory } from './control-replay.js'
import type { CommunityMsg } from './messages.js'
import type { ConnectionRegistry, ConnView } from './subscription-index.js'

/** WebSocket close code for policy refusals (RFC 6455 §7.4.1: 1008 policy violation). */
const CLOSE_POLICY = 1008

/**
 * A remote event as the live feed takes it: parsed here, its signature checked beside the actor before it is
 * delivered (Redis write access must not let anyone put words in a pubkey's mouth). Anything Redis hands us
 * that isn't a well-formed, live event is dropped and counted.
 */
export function parseRemoteEvent(raw: string, d: ClusterDeps): { event: NostrEvent; check: () => Promise<boolean> } | undefined {
  const e = parseEventShape(raw)
  if (!e) {
    d.rejected('remote-event-json')
    return undefined
  }
  if (isExpired(e, d.nowSeconds())) return undefined
  const check = async () => {
    const ok = (await d.verifier.verify(e).catch(() => 'bad-sig')) === 'ok'
    if (!ok) d.rejected('remote-event-signature')
    return ok
  }
  return { event: e, check }
}

/** Verify a control payload and turn it into the local message it asks for; log and skip anything else. */
export async function acceptControl(
  msg: Extract<CommunityMsg, { type: 'Control' }>,
  community: string,
  d: ClusterDeps,
  replays: ControlReplayMemory,
) {
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

/** Tell the client why, then close: NIP-01 clients see a `blocked:` NOTICE before the socket ends. */
function closeFor(conn: ConnView, why: string) {
  conn.queue.pushControl(noticeFrame(reason('blocked', why)))
  conn.queue.closeAfterFlush(CLOSE_POLICY, `blocked: ${why}`.slice(0, 120))
}

export function disconnectPubkey(conns: ConnectionRegistry, pubkey: string, why: string): number {
  let n = 0
  for (const conn of conns.values()) {
    // an owner's ban covers the agents it attested (docs/agent-attestation.md)
    if (!conn.authed.has(pubkey) && ![...conn.owners.values()].includes(pubkey)) continue
    closeFor(conn, why)
    n++
  }
  return n
}

export function disconnectAll(conns: ConnectionRegistry, why: string): number {
  for (const conn of conns.values()) closeFor(conn, why)
  return conns.size
}

/** A conn-control op applied on this node only (it came from the bus: never re-broadcast). */
export function toLocalMessage(op: ConnControlOp): CommunityMsg {
  return op.op === 'DisconnectPubkey'
    ? { type: 'DisconnectPubkey', pubkey: op.pubkey, reason: op.reason, broadcast: false }
    : { type: 'DisconnectCommunity', reason: op.reason, broadcast: false }
}
