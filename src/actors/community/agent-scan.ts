// The orphan scan of a community's agent connections (docs/agent-registry.md#agent-connection-states): every
// agentOrphanScanSeconds their states move along, and a ZOMBIE silent for the session timeout past its lease
// is told why and closed, then forgotten at once, so no subscription or routing entry is kept for it.
import { type Reason, reason } from '../../protocols/reasons.js'
import { forget } from './community-connections.js'
import type { CommunityDeps, CommunityState } from './community-state.js'
import { closeWith } from './disconnects.js'

export const SESSION_EXPIRED: Reason = reason('restricted', 'agent session expired: no heartbeat since its lease lapsed')

export function onAgentScan(state: CommunityState, deps: CommunityDeps): CommunityState {
  const due = state.agents.scan()
  for (const connId of due) {
    state.agents.reaped(connId)
    const conn = state.conns.get(connId)
    if (conn && !conn.queue.closed) closeWith(conn, SESSION_EXPIRED)
    forget(state, connId, deps)
  }
  if (due.length > 0)
    deps.log.info({ community: deps.record.id, connections: due.length }, 'reaped agent connections silent past their lease')
  return state
}
