// What the relay knows of an agent connection from its heartbeats alone (docs/agent-registry.md#agent-connection-states):
// the same gradient the agent client keeps (ACTIVE, SUSPECT, ZOMBIE), decided from the time since the
// connection's last heartbeat. Pure: the caller brings the clock.
import type { AgentConnectionState } from './console.js'

/** The thresholds one relay applies, in milliseconds. */
export interface AgentTiming {
  /** presenceHeartbeatSeconds: how often an agent is expected to heartbeat */
  heartbeatMs: number
  /** 3 × the heartbeat, as the presence store keeps a presence */
  leaseMs: number
  /** agentSessionTimeoutSeconds: how long a ZOMBIE keeps its socket past its lease before it is reaped */
  sessionTimeoutMs: number
}

/** One heartbeat late plus half an interval of network jitter: a single slow heartbeat is not suspect. */
const SUSPECT_AFTER_INTERVALS = 1.5
/** docs/presence.md: a presence lives three heartbeats, so two lost in a row don't lapse it. */
const LEASE_INTERVALS = 3

/** How long a presence (an agent's lease) lives after its heartbeat: the presence store's TTL, NIP-11's lease_seconds. */
export const presenceLeaseSeconds = (heartbeatSeconds: number): number => LEASE_INTERVALS * heartbeatSeconds

export function agentTimingOf(heartbeatSeconds: number, sessionTimeoutSeconds: number): AgentTiming {
  return {
    heartbeatMs: heartbeatSeconds * 1000,
    leaseMs: presenceLeaseSeconds(heartbeatSeconds) * 1000,
    sessionTimeoutMs: sessionTimeoutSeconds * 1000,
  }
}

/**
 * ACTIVE while the last heartbeat is at most 1.5 intervals old, SUSPECT until the lease lapses, ZOMBIE past
 * it (its socket still open: a closed one is CLOSED, which only the caller knows).
 */
export function agentStateAt(lastHeartbeatMs: number, nowMs: number, timing: AgentTiming): Exclude<AgentConnectionState, 'CLOSED'> {
  const ageMs = nowMs - lastHeartbeatMs
  if (ageMs <= SUSPECT_AFTER_INTERVALS * timing.heartbeatMs) return 'ACTIVE'
  if (ageMs <= timing.leaseMs) return 'SUSPECT'
  return 'ZOMBIE'
}

/** A ZOMBIE silent for the session timeout past its lease: its socket is closed and it is counted as reaped. */
export function isDueForReaping(lastHeartbeatMs: number, nowMs: number, timing: AgentTiming): boolean {
  return nowMs - lastHeartbeatMs > timing.leaseMs + timing.sessionTimeoutMs
}

/** Until the lease lapses; negative once it lapsed that long ago. */
export function leaseRemainingMs(lastHeartbeatMs: number, nowMs: number, timing: AgentTiming): number {
  return lastHeartbeatMs + timing.leaseMs - nowMs
}
