// The operator console's documents: what each node publishes about itself every statusIntervalMs, and what the
// console's JSON endpoints and its live stream carry (docs/operating.md#the-console). The page and scripts
// outside the repository read them, so a field is added here, never renamed. Pure types and constants.

/**
 * What the relay knows of one agent connection (docs/agent-registry.md#agent-connection-states): ACTIVE while
 * heartbeats arrive on time, SUSPECT after 1.5 heartbeat intervals without one, ZOMBIE past its lease with
 * the socket still open, CLOSED once it said goodbye, closed its socket or was reaped.
 */
export const AGENT_CONNECTION_STATES = ['ACTIVE', 'SUSPECT', 'ZOMBIE', 'CLOSED'] as const
export type AgentConnectionState = (typeof AGENT_CONNECTION_STATES)[number]

/** Why an agent connection became CLOSED (the `cause` of apiary_agent_departures_total). */
export const AGENT_DEPARTURE_CAUSES = ['goodbye', 'lease_lapsed', 'socket_closed', 'reaped'] as const
export type AgentDepartureCause = (typeof AGENT_DEPARTURE_CAUSES)[number]

/** One agent connection as the console lists it. Times are wall-clock milliseconds (epoch) or durations in ms. */
export interface AgentRow {
  node: string
  community: string
  /** the connection's id on its node */
  conn: string
  pubkey: string
  state: AgentConnectionState
  /** its announcement's `c` tags (empty until a 31990 of it took effect) */
  capabilities: string[]
  /** its announcement's `load` tag, 0..1, when it has one */
  load?: number
  /** since its last heartbeat on this connection */
  heartbeatAgeMs: number
  /** until its lease lapses (negative: lapsed that long ago) */
  leaseRemainingMs: number
  connectedSinceMs: number
  /** ACTIVE by its state, yet its last heartbeat is older than its lease: the relay's view lags; look closer */
  flagged: boolean
}

/** One of a node's busiest connections over the last 10 s. */
export interface HotConnectionRow {
  node: string
  conn: string
  community: string
  /** the pubkeys authenticated on it (NIP-42) */
  pubkeys: string[]
  /** the client's address as the trusted-proxy rule resolves it */
  ip: string
  subscriptions: number
  agentState?: AgentConnectionState
  inFramesPerSecond: number
  inBytesPerSecond: number
  outBytesPerSecond: number
}

/** How hot connections are ranked; each ranking keeps its top 20. */
export const HOT_RANKINGS = ['inFramesPerSecond', 'inBytesPerSecond', 'outBytesPerSecond'] as const
export type HotRanking = (typeof HOT_RANKINGS)[number]
export const HOT_TOP_K = 20

export interface CommunityStatus {
  id: string
  connections: number
  subscriptions: number
  agents: Record<AgentConnectionState, number>
  /** events accepted per second over the last interval, by kind */
  eventsPerSecondByKind: Record<string, number>
  /** refusals per second over the last interval, by reason prefix (`rate-limited`, `restricted`, ...) */
  refusalsPerSecondByReason: Record<string, number>
}

/** A supervision event as the console shows it; `seq` grows per node, so a reader asks for what came after. */
export interface SupervisionRow {
  node: string
  seq: number
  atMs: number
  type: 'crashed' | 'backoff' | 'restarted' | 'gave-up' | 'lagged' | 'stopped' | 'overflow' | 'escalated' | 'degraded'
  path: string
  supervisor: string
  /** the error's name and message, a backoff's delay, a lag's size: short, never a stack */
  detail: string
}

export interface MeshSessionRow {
  community: string
  session: string
  owner: string
  generation: number
  /** owner here: until its lease lapses; elsewhere undefined */
  leaseRemainingMs?: number
  local: boolean
}

export interface MeshConsoleStatus {
  runtime: string
  peers: { runtime: string; endpoint: string; phi: number; suspect: boolean; connected: boolean }[]
  sessions: MeshSessionRow[]
  fenceRefusals: number
  leasesLost: number
}

/** What one node publishes about itself every statusIntervalMs. */
export interface NodeStatus {
  node: string
  publishedAtMs: number
  startedAtMs: number
  ready: boolean
  /** what makes it not ready (architecture §11), empty when ready */
  degraded: string[]
  connections: number
  subscriptions: number
  eventsInPerSecond: number
  eventsOutPerSecond: number
  refusalsPerSecondByPrefix: Record<string, number>
  loopDelayP99Ms: number
  /** garbage collections that paused for 10 ms or more during the last interval */
  gcPauses: { count: number; maxMs: number }
  rssBytes: number
  /** of one core, over the last interval (100 = one core busy) */
  cpuPercent: number
  communities: CommunityStatus[]
  hot: HotConnectionRow[]
  /** its latest supervision events (at most 100), oldest first */
  supervision: SupervisionRow[]
  mesh?: MeshConsoleStatus
}

/** A node as the console shows it: `gone` once it missed three publications. */
export interface NodeView {
  status: NodeStatus
  gone: boolean
}

/** One point of a node's charts (every statusIntervalMs, the last 10 minutes). */
export interface NodeSample {
  atMs: number
  connections: number
  eventsInPerSecond: number
  eventsOutPerSecond: number
  loopDelayP99Ms: number
  rssBytes: number
  cpuPercent: number
}

/** Who signed in: operators see every community; a community's admins see theirs only. */
export interface ConsoleIdentity {
  pubkey: string
  role: 'operator' | 'admin'
  /** the communities this identity may see (every one, for an operator) */
  communities: string[]
  /** sent back in the X-Apiary-CSRF header of every state-changing call */
  csrf: string
  expiresAtMs: number
}

/** The views of the console's live stream (`GET /console/api/stream?view=...`). */
export const CONSOLE_VIEWS = ['overview', 'communities', 'agents', 'hot', 'supervision', 'mesh', 'moderation'] as const
export type ConsoleView = (typeof CONSOLE_VIEWS)[number]

/**
 * One message of the live stream (server-sent event `snapshot`, at least once a second). `nodes` is always
 * there (the header shows them); the rest only for the view asked for. An admin's snapshot names nothing
 * outside their communities: node figures without the other communities, hot connections, agents and
 * supervision events of their communities only, no mesh peers.
 */
export interface ConsoleSnapshot {
  atMs: number
  view: ConsoleView
  nodes: NodeView[]
  /** the charts' points, by node: the whole 10 minutes in the stream's first snapshot, then the new points */
  samples?: Record<string, NodeSample[]>
  agents?: { total: number; offset: number; rows: AgentRow[] }
  hot?: { ranking: HotRanking; rows: HotConnectionRow[] }
  /** merged across nodes, oldest first; after the first snapshot only what is new */
  supervision?: SupervisionRow[]
  mesh?: (MeshConsoleStatus & { node: string })[]
}

/** What the relay side tells the console of one community's agent connections on this node. */
export interface AgentConnectionsView {
  /** every connection not CLOSED, its state as of `nowMs` */
  rows(nowMs: number): Omit<AgentRow, 'node' | 'community'>[]
  counts(nowMs: number): Record<AgentConnectionState, number>
  stateOf(conn: string, nowMs: number): AgentConnectionState | undefined
}
