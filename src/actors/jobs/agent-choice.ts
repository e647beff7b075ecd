// Which live agent gets the next job (docs/jobs.md#assignment): ACTIVE connections offering the capability,
// with room under the concurrency they announced, least loaded first (jobs held here over concurrency, then
// the load they announced), and among equals the one that got a job longest ago, so work spreads evenly.

export interface AgentCandidate {
  conn: string
  pubkey: string
  /** 0..1 as announced, when it was */
  load?: number
  /** how many jobs it takes at once (its announcement's `concurrency`, default 1) */
  concurrency: number
  /**
   * keeps the jobs it holds and gets no new one: not listening for assignments now (its subscription closed, not
   * yet sent again), or SUSPECT (a heartbeat late, its lease not yet lapsed)
   */
  holdsOnly?: boolean
}

export interface ChoiceState {
  /** jobs each connection holds from this dispatcher */
  held: ReadonlyMap<string, number>
  /** when each connection last got a job (monotonic ms) */
  lastAssignedMs: ReadonlyMap<string, number>
}

/**
 * The agent for the next job, never one of `excluded` (pubkeys that refused or failed it) nor one `allowed` says
 * no to (role domains); undefined: none has room.
 */
export function chooseAgent(
  candidates: readonly AgentCandidate[],
  s: ChoiceState,
  excluded: ReadonlySet<string>,
  allowed?: (pubkey: string) => boolean,
): AgentCandidate | undefined {
  let best: AgentCandidate | undefined
  let bestKey: [number, number, number] | undefined
  for (const c of candidates) {
    if (excluded.has(c.pubkey) || c.holdsOnly || (allowed !== undefined && !allowed(c.pubkey))) continue
    const held = s.held.get(c.conn) ?? 0
    if (held >= c.concurrency) continue
    const key: [number, number, number] = [held / c.concurrency, c.load ?? 0, s.lastAssignedMs.get(c.conn) ?? -1]
    if (bestKey === undefined || less(key, bestKey)) {
      best = c
      bestKey = key
    }
  }
  return best
}

const less = (a: readonly number[], b: readonly number[]): boolean => {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! < b[i]!
  return false
}
