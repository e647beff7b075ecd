// What the console's HTTP side needs from the node (src/relay/ builds it): the cluster's statuses as the status
// board holds them, this node's live tables, and the NIP-86 methods, called on behalf of a signed-in identity.
import type { AgentConnectionState, AgentRow, HotConnectionRow, HotRanking, NodeSample, NodeView } from '../../../protocols/console.js'
import type { Nip86Request, Nip86Response } from '../../../protocols/nip86/methods.js'

export interface AgentQuery {
  /** the communities the identity may see */
  communities: ReadonlySet<string> | 'all'
  state?: AgentConnectionState
  capability?: string
  offset: number
  limit: number
}

export interface ConsoleSource {
  /** this node's id (the status board's key) */
  node: string
  /** every node the board knows, this one included, newest status first by node id */
  nodes(): NodeView[]
  /** each node's chart points since `afterMs` (the last 10 minutes at most) */
  samples(afterMs: number): Record<string, NodeSample[]>
  /** the agent connections on every node (another node's as it last published them), filtered and paged */
  agents(q: AgentQuery): { total: number; rows: AgentRow[] }
  /** the cluster's top 20 by `ranking`, merged from every node's (this node's is current) */
  hot(ranking: HotRanking, communities: ReadonlySet<string> | 'all'): HotConnectionRow[]
  /** someone is looking at agents: nodes publish their agent rows while any console watches (a few seconds) */
  watchAgents(): void
  /** the ids of the communities served */
  communityIds(): string[]
  /** a community's admins (its record), empty for an unknown community */
  adminsOf(community: string): string[]
  isOperator(pubkey: string): boolean
  /** a NIP-86 method on behalf of `pubkey`, checked as the NIP-86 endpoint checks it (canManage, isAllowed) */
  manage(community: string, pubkey: string, request: Nip86Request): Promise<Nip86Response>
}
