// Which peers this node should keep a link to, from what the readiness registry lists and what gossip says:
// the membership actor spawns a link actor for each candidate and stops those of peers that leave.
import type { MemberState } from '../../protocols/mesh/gossip.js'
import type { ReadinessRecord } from '../../protocols/mesh/readiness.js'

export interface LinkCandidates {
  /** runtime → endpoint of every peer that should be linked */
  wanted: Map<string, string>
  /** peers that announced they are leaving */
  draining: Set<string>
}

/**
 * Every peer the registry lists that is not draining, and every one gossip names that is not draining and that
 * we do not suspect; the registry's word wins over gossip's. A peer whose record expired and that we suspect
 * is in neither: it is gone.
 */
export function linkCandidates(
  self: string,
  members: readonly MemberState[],
  suspects: ReadonlySet<string>,
  records: readonly ReadinessRecord[],
): LinkCandidates {
  const wanted = new Map<string, string>()
  const draining = new Set<string>()
  for (const m of members) {
    if (m.draining) draining.add(m.runtime)
    else if (!suspects.has(m.runtime)) wanted.set(m.runtime, m.endpoint)
  }
  for (const r of records) {
    if (r.draining) {
      draining.add(r.runtime)
      wanted.delete(r.runtime)
    } else {
      draining.delete(r.runtime)
      wanted.set(r.runtime, r.endpoint)
    }
  }
  wanted.delete(self)
  return { wanted, draining }
}
