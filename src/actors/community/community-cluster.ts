import type { Verifier } from '../../infra/verify/verifier.js'
import { type ConnControlOp, parseControlEvent } from '../../protocols/control.js'
import { type NostrEvent, parseEventShape } from '../../protocols/nip01/event.js'
import { noticeFrame } from '../../protocols/nip01/relay-message.js'
import { isExpired } from '../../protocols/nip40.js'
import { reason } from '../../protocols/reasons.js'
import type { CommunityLink } from './community-link.js'
import type { CommunityMsg } from './messages.js'
import type { ConnectionRegistry, ConnView } from './subscription-index.js'

/** What the community's cluster handlers need beyond the single-node ones. */
export interface ClusterDeps {
  link: CommunityLink
  verifier: Verifier
  relayPubkey: string
  nowSeconds: () => number
  log: { warn(o: object, m: string): void }
  rejected: (why: string) => void
  /** re-read the community list now (another node archived one) */
  revalidate: () => void
}

/** Control payloads older than this do nothing: a replayed ban broadcast can't kick anyone a day later. */
export const CONTROL_MAX_AGE_SECONDS = 300
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

/**
 * Conn-control payloads applied here, by id, for their freshness window: a replay of a signed DisconnectPubkey or
 * DisconnectCommunity (anyone who can PUBLISH on Redis can resend one) is counted and skipped. Older ids
 * than the window need no memory: they are refused as stale. Bounded: past `capacity` the oldest go first.
 */
export class ControlReplayMemory {
  private readonly seen = new Map<string, number>()
  constructor(private readonly capacity = 10_000) {}

  /** true the first time `id` is offered within its window */
  claim(id: string, createdAt: number, nowSeconds: number): boolean {
    for (const [old, expiresAt] of this.seen) {
      if (expiresAt > nowSeconds && this.seen.size < this.capacity) break
      this.seen.delete(old)
    }
    if (this.seen.has(id)) return false
    this.seen.set(id, createdAt + CONTROL_MAX_AGE_SECONDS)
    return true
  }
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
