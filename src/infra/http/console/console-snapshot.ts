// One message of the console's live stream for one reader: what its view needs, within its scope, with the
// charts' points and supervision rows it has not been sent yet (the cursor remembers what it was sent).
import type { ConsoleSnapshot, NodeSample, SupervisionRow } from '../../../protocols/console.js'
import type { ConsoleQuery } from './console-query.js'
import type { ConsoleSource } from './console-source.js'
import { inScope, isPathInScope, type Scope, scopeNodeView } from './scope.js'

/** What one stream has sent so far. */
export interface SnapshotCursor {
  /** the newest chart point sent, per the source's atMs; -1 before the first snapshot */
  samplesAfterMs: number
  /** the highest supervision seq sent, by node */
  supervisionSeen: Map<string, number>
}

export const newCursor = (): SnapshotCursor => ({ samplesAfterMs: -1, supervisionSeen: new Map() })

export function buildSnapshot(
  source: ConsoleSource,
  scope: Scope,
  q: ConsoleQuery,
  cursor: SnapshotCursor,
  nowMs: number,
): ConsoleSnapshot {
  const nodes = source.nodes().map((n) => scopeNodeView(n, scope))
  const snapshot: ConsoleSnapshot = { atMs: nowMs, view: q.view, nodes }
  if (q.view === 'overview') snapshot.samples = newSamples(source, cursor)
  if (q.view === 'agents') {
    source.watchAgents()
    const page = source.agents({ communities: scope, state: q.state, capability: q.capability, offset: q.offset, limit: q.limit })
    snapshot.agents = { total: page.total, offset: q.offset, rows: page.rows.filter((r) => inScope(scope, r.community)) }
  }
  if (q.view === 'hot') snapshot.hot = { ranking: q.ranking, rows: source.hot(q.ranking, scope).filter((r) => inScope(scope, r.community)) }
  if (q.view === 'supervision') snapshot.supervision = newSupervision(nodes, scope, cursor)
  if (q.view === 'mesh' && scope === 'all')
    snapshot.mesh = nodes.flatMap((n) => (n.status.mesh ? [{ ...n.status.mesh, node: n.status.node }] : []))
  return snapshot
}

function newSamples(source: ConsoleSource, cursor: SnapshotCursor): Record<string, NodeSample[]> {
  const samples = source.samples(cursor.samplesAfterMs)
  for (const points of Object.values(samples)) for (const p of points) cursor.samplesAfterMs = Math.max(cursor.samplesAfterMs, p.atMs)
  return samples
}

/** Rows each node published after the last one sent from it, merged oldest first. */
function newSupervision(nodes: ConsoleSnapshot['nodes'], scope: Scope, cursor: SnapshotCursor): SupervisionRow[] {
  const rows: SupervisionRow[] = []
  for (const { status } of nodes) {
    const seen = cursor.supervisionSeen.get(status.node) ?? -1
    let highest = seen
    for (const r of status.supervision) {
      if (r.seq <= seen) continue
      highest = Math.max(highest, r.seq)
      if (scope === 'all' || isPathInScope(r.path, scope)) rows.push(r)
    }
    cursor.supervisionSeen.set(status.node, highest)
  }
  return rows.sort((a, b) => a.atMs - b.atMs || a.seq - b.seq)
}
