// What a capability session hands between nodes (docs/mesh.md §9): the dispatcher's notes as they cross the
// tunnel (plain JSON, an agent's connection named as the receiving node names it), and a peer's agents as the
// owner's dispatcher sees them. Pure.
import { type AgentNote, type JobNote, remoteConn } from '../../protocols/mesh/job-frames.js'
import type { AgentCandidate } from '../jobs/agent-choice.js'
import type { Holder } from '../jobs/job-board.js'
import type { DispatcherMsg, DispatcherNote } from '../jobs/messages.js'

export function toDispatcher(note: DispatcherNote): DispatcherMsg {
  return note.type === 'Agents' ? { type: 'AgentReady' } : note
}

/** A note as it crosses to the owner: plain JSON, the agent's connection as this node names it. */
export function toWire(note: Exclude<DispatcherNote, { type: 'Agents' }>): JobNote {
  switch (note.type) {
    case 'Enqueued':
      return { type: 'Enqueued', job: note.job }
    case 'Reported': {
      const { generation, ...report } = note.report
      return { type: 'Reported', pubkey: note.pubkey, report: generation === undefined ? report : { ...report, generation } }
    }
    case 'Cancelled':
      return { type: 'Cancelled', jobs: note.jobs }
    case 'AgentGone':
      return { type: 'AgentGone', conn: note.conn, why: note.why }
    case 'Resync':
      return note
  }
}

/** A peer's note for the dispatcher here; `local`: one this node held for an owner before it became one. */
export function fromWire(
  note: Exclude<JobNote, { type: 'Agents' }>,
  peer: string,
  local = false,
): Exclude<DispatcherNote, { type: 'Agents' }> {
  switch (note.type) {
    case 'Enqueued':
      return { type: 'Enqueued', job: note.job }
    case 'Reported':
      return { type: 'Reported', pubkey: note.pubkey, report: { ...note.report, generation: note.report.generation } }
    case 'Cancelled':
      return { type: 'Cancelled', jobs: note.jobs }
    case 'AgentGone':
      return { type: 'AgentGone', conn: local ? note.conn : remoteConn(peer, note.conn), why: note.why }
    case 'Resync':
      return note
  }
}

/**
 * The agents the other nodes reported to the owner: per peer its latest answer to a poll (or its own Agents
 * note since), read beside the session by its dispatcher. A peer's answer older than `staleMs` is not used.
 */
export class RemoteAgents {
  private readonly byPeer = new Map<string, { agents: AgentCandidate[]; holders: Map<string, Holder>; atMs: number }>()

  constructor(private readonly staleMs: number) {}

  /**
   * What `peer` reports now, at `atMs`; `holds` false: an Agents note, which says nothing of the jobs held (the
   * last poll's stand). Returns the connections it reported before and not now.
   */
  report(peer: string, agents: AgentNote[], atMs: number, holds: boolean): string[] {
    const before = this.byPeer.get(peer)
    const next = candidatesOf(peer, agents)
    this.byPeer.set(peer, { agents: next.agents, holders: holds ? next.holders : (before?.holders ?? new Map()), atMs })
    if (before === undefined) return []
    const live = new Set(next.agents.map((a) => a.conn))
    return before.agents.filter((a) => !live.has(a.conn)).map((a) => a.conn)
  }

  /** the peer is gone: its connections, for the dispatcher */
  drop(peer: string): string[] {
    const gone = this.byPeer.get(peer)
    this.byPeer.delete(peer)
    return gone?.agents.map((a) => a.conn) ?? []
  }

  clear(): void {
    this.byPeer.clear()
  }

  agents(nowMs: number): AgentCandidate[] {
    const out: AgentCandidate[] = []
    for (const r of this.byPeer.values()) if (nowMs - r.atMs < this.staleMs) out.push(...r.agents)
    return out
  }

  holders(nowMs: number): Map<string, Holder> {
    const out = new Map<string, Holder>()
    for (const r of this.byPeer.values()) if (nowMs - r.atMs < this.staleMs) for (const [job, h] of r.holders) out.set(job, h)
    return out
  }
}

/** A peer's agents as the owner's candidates, their connections named `@<runtime>/<conn>`, and the jobs they hold. */
function candidatesOf(peer: string, agents: AgentNote[]): { agents: AgentCandidate[]; holders: Map<string, Holder> } {
  const holders = new Map<string, Holder>()
  const candidates = agents.map(({ holds, ...a }) => {
    const conn = remoteConn(peer, a.conn)
    for (const h of holds ?? []) holders.set(h.job, { conn, pubkey: a.pubkey, generation: h.generation })
    return { ...a, conn }
  })
  return { agents: candidates, holders }
}
