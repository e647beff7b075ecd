// Who may see what (docs/operating.md#the-console): an operator sees every community, a community's admin sees
// theirs only, and anyone else nothing. Read from the node at each request, so an admin removed from a
// community stops seeing it at their next request, not when their session ends.
import type { NodeStatus, NodeView } from '../../../protocols/console.js'
import type { ConsoleSource } from './console-source.js'

export type Scope = ReadonlySet<string> | 'all'

export interface Access {
  pubkey: string
  role: 'operator' | 'admin'
  communities: string[]
  scope: Scope
}

/** The pubkey's role now: undefined for someone who is neither an operator nor any community's admin. */
export function accessOf(source: ConsoleSource, pubkey: string): Access | undefined {
  const ids = source.communityIds()
  if (source.isOperator(pubkey)) return { pubkey, role: 'operator', communities: ids, scope: 'all' }
  const mine = ids.filter((id) => source.adminsOf(id).includes(pubkey))
  if (mine.length === 0) return undefined
  return { pubkey, role: 'admin', communities: mine, scope: new Set(mine) }
}

export const inScope = (scope: Scope, community: string): boolean => scope === 'all' || scope.has(community)

/** A `community=` narrowing: that one community when it is in scope, undefined when it is not. */
export function narrowScope(scope: Scope, community: string | undefined): Scope | undefined {
  if (community === undefined) return scope
  return inScope(scope, community) ? new Set([community]) : undefined
}

/**
 * The community an actor path belongs to (`community/<id>/...`, `registry/<id>/...`), or undefined for a
 * node-level actor. Supervision rows and `degraded` entries name actors this way.
 */
export function communityOfPath(path: string): string | undefined {
  const parts = path.split('/')
  const at = parts.findIndex((p) => p === 'community' || p === 'registry')
  return at === -1 ? undefined : parts[at + 1]
}

/** What `scope` may see of a node: node-wide figures stay; other communities, their rows and the mesh go. */
export function scopeNodeView(view: NodeView, scope: Scope): NodeView {
  if (scope === 'all') return view
  const s = view.status
  const status: NodeStatus = {
    ...s,
    degraded: s.degraded.filter((d) => {
      const c = communityOfPath(d)
      return c === undefined ? !d.includes('/') : scope.has(c)
    }),
    communities: s.communities.filter((c) => scope.has(c.id)),
    hot: s.hot.filter((h) => scope.has(h.community)),
    supervision: s.supervision.filter((r) => isPathInScope(r.path, scope)),
    mesh: undefined,
  }
  return { ...view, status }
}

/** Whether `scope` may see an event of this actor: a node-level actor's (no community in its path) is operators' only. */
export function isPathInScope(path: string, scope: Scope): boolean {
  const c = communityOfPath(path)
  return c !== undefined && inScope(scope, c)
}
