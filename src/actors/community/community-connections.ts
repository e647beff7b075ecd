// The connections a community serves on this node: registered on Join (or with their first request), their
// subscriptions ended by Unsubscribe, forgotten with their presence holds and agent state on Disconnect (or
// by the sweep, community-upkeep.ts, or reaped by the agent scan, agent-scan.ts), and counted by Stats.
import { releasePresence } from './community-presence.js'
import type { CommunityDeps, CommunityState } from './community-state.js'
import type { CommunityMsg } from './messages.js'

type Msg<T extends CommunityMsg['type']> = Extract<CommunityMsg, { type: T }>

/**
 * A connection whose Join was refused (it opened while this community was down) registers with its first
 * request: a ban or an archive must reach it like any other.
 */
export function registerSender(state: CommunityState, msg: CommunityMsg): void {
  if (msg.type !== 'Publish' && msg.type !== 'Subscribe' && msg.type !== 'Count') return
  const { conn } = msg
  if (conn && !conn.queue.closed && !state.conns.has(conn.id)) state.conns.set(conn.id, conn)
}

export function onJoin(state: CommunityState, msg: Msg<'Join'>): CommunityState {
  state.conns.set(msg.conn.id, msg.conn)
  return state
}

export function onUnsubscribe(state: CommunityState, msg: Msg<'Unsubscribe'>): CommunityState {
  state.index.remove(msg.connId, msg.subId)
  return state
}

export function onDisconnect(state: CommunityState, msg: Msg<'Disconnect'>, deps: CommunityDeps): CommunityState {
  forget(state, msg.connId, deps)
  return state
}

/** A connection gone: its subscriptions, its registry entry, its agent state and its presence holds. */
export function forget(state: CommunityState, connId: string, deps: CommunityDeps): void {
  state.index.removeConnection(connId)
  state.conns.delete(connId)
  state.agents.left(connId)
  state.reads.forget(connId)
  // best effort, beside the actor: a lost release leaves the presence to expire with its TTL
  void releasePresence(state.presenceHolds, connId, deps.presence)
}

export function onStats(state: CommunityState, msg: Msg<'Stats'>, deps: CommunityDeps): CommunityState {
  msg.reply({
    id: deps.record.id,
    subscriptions: state.index.size,
    connections: state.conns.size,
    eventsAccepted: state.accepted,
    presenceHolders: state.presenceHolds.size,
  })
  return state
}
