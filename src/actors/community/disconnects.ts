// Closing sockets on an order (a ban, a blockip, an archive): this node's connections of a pubkey (and of the
// agents it attested), from an address range, or of the whole community get a `blocked:` NOTICE and close with 1008; `broadcast` asks the
// other nodes to do the same (cluster-control.ts).
import { isInBlockedRanges } from '../../protocols/address-range.js'
import { noticeFrame } from '../../protocols/nip01/relay-message.js'
import { type Reason, reason } from '../../protocols/reasons.js'
import { broadcastLogged } from './cluster-control.js'
import type { CommunityDeps, CommunityState } from './community-state.js'
import type { DisconnectCommunityMsg, DisconnectIpMsg, DisconnectPubkeyMsg } from './messages.js'
import type { ConnectionRegistry, ConnView } from './subscription-index.js'

/** WebSocket close code for policy refusals (RFC 6455 §7.4.1: 1008 policy violation). */
const CLOSE_POLICY = 1008

export function onDisconnectOrder(
  state: CommunityState,
  msg: DisconnectPubkeyMsg | DisconnectIpMsg | DisconnectCommunityMsg,
  deps: CommunityDeps,
): CommunityState {
  disconnectHere(state.conns, msg, deps)
  return state
}

/** Close this node's sockets of a pubkey (a ban) or of the community; `broadcast` asks the other nodes too. */
export function disconnectHere(
  conns: ConnectionRegistry,
  msg: DisconnectPubkeyMsg | DisconnectIpMsg | DisconnectCommunityMsg,
  deps: Pick<CommunityDeps, 'cluster' | 'log' | 'record'>,
): void {
  if (msg.type === 'DisconnectPubkey') {
    disconnectPubkey(conns, msg.pubkey, msg.reason)
    if (msg.broadcast)
      void broadcastLogged(deps, 'conn-control', { op: 'DisconnectPubkey', pubkey: msg.pubkey, eventId: '', reason: msg.reason })
    return
  }
  if (msg.type === 'DisconnectIp') {
    for (const conn of conns.values()) if (isInBlockedRanges(conn.ip, [msg.range])) closeFor(conn, msg.reason)
    if (msg.broadcast) void broadcastLogged(deps, 'conn-control', { op: 'DisconnectIp', range: msg.range, reason: msg.reason })
    return
  }
  for (const conn of conns.values()) closeFor(conn, msg.reason)
  // done: this node's sockets are told, and the other nodes asked to tell theirs
  if (msg.broadcast) void broadcastLogged(deps, 'conn-control', { op: 'DisconnectCommunity', reason: msg.reason }).then(() => msg.done?.())
  else msg.done?.()
}

function disconnectPubkey(conns: ConnectionRegistry, pubkey: string, why: string): void {
  for (const conn of conns.values()) {
    // an owner's ban covers the agents it attested (docs/agent-attestation.md)
    if (conn.authed.has(pubkey) || [...conn.owners.values()].includes(pubkey)) closeFor(conn, why)
  }
}

/** Tell the client why, then close: NIP-01 clients see a `blocked:` NOTICE before the socket ends. */
function closeFor(conn: ConnView, why: string) {
  closeWith(conn, reason('blocked', why))
}

/** The NOTICE first, then close 1008 with the same reason (a close reason is at most 123 bytes: RFC 6455 §5.5). */
export function closeWith(conn: ConnView, why: Reason): void {
  conn.queue.pushControl(noticeFrame(why))
  conn.queue.closeAfterFlush(CLOSE_POLICY, why.slice(0, 120))
}
