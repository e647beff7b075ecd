// One community's agent connections on this node (docs/agent-registry.md#agent-connection-states), keyed by
// connection id: who registered as an agent (a heartbeat recorded, or its 31990 took effect on it), when it last
// heartbeat, and what its latest announcement says. Kept in CommunitySurvivors: a restart must not forget who
// is silent, or a ZOMBIE would start its countdown afresh. A connection leaves the table as it becomes CLOSED.
import type { Metrics } from '../../infra/metrics.js'
import { type AgentTiming, agentStateAt, isDueForReaping, leaseRemainingMs } from '../../protocols/agent-connection-state.js'
import type { AgentConnectionState, AgentConnectionsView, AgentDepartureCause, AgentRow } from '../../protocols/console.js'

type OpenState = Exclude<AgentConnectionState, 'CLOSED'>
const OPEN_STATES: readonly OpenState[] = ['ACTIVE', 'SUSPECT', 'ZOMBIE']

export interface AgentConnectionsDeps {
  community: string
  timing: AgentTiming
  /** monotonic: heartbeat ages must not stretch with a wall-clock step */
  nowMs: () => number
  /** epoch ms, only for when a connection registered (what the console shows) */
  wallMs: () => number
  metrics: Pick<Metrics, 'agentConnections' | 'agentHeartbeatAge' | 'agentDepartures'>
  /** hears a connection become ACTIVE (with its capabilities) or leave ACTIVE for good (closed, or lapsed): job dispatch */
  changed?: (conn: string, what: { active: readonly string[] } | { gone: 'closed' | 'lapsed' }) => void
}

interface AgentEntry {
  conn: string
  /** the pubkey that registered the connection (a connection may AUTH several) */
  pubkey: string
  connectedSinceMs: number
  /** monotonic; the registration time until its first heartbeat, so an announcer that never heartbeats lapses too */
  lastHeartbeatMs: number
  heartbeats: number
  capabilities: string[]
  load?: number
  /** jobs it takes at once, per capability (its announcement's `concurrency` tags, docs/jobs.md), 1 without one */
  concurrency: Concurrency
  /** as last counted in the gauge: moved by heartbeats and by the scan */
  counted: OpenState
}

export type AgentRowHere = Omit<AgentRow, 'node' | 'community'>

export class AgentConnections implements AgentConnectionsView {
  private readonly entries = new Map<string, AgentEntry>()
  private readonly tally: Record<OpenState, number> = { ACTIVE: 0, SUSPECT: 0, ZOMBIE: 0 }

  constructor(private readonly deps: AgentConnectionsDeps) {}

  get size(): number {
    return this.entries.size
  }

  /** A heartbeat of `pubkey` recorded on `conn` (the presence store took it): ACTIVE again. */
  heartbeat(conn: string, pubkey: string): void {
    const now = this.deps.nowMs()
    const entry = this.entries.get(conn) ?? this.register(conn, pubkey, now)
    if (entry.heartbeats > 0) this.deps.metrics.agentHeartbeatAge.observe((now - entry.lastHeartbeatMs) / 1000)
    entry.lastHeartbeatMs = now
    entry.heartbeats++
    this.move(entry, 'ACTIVE')
    this.deps.changed?.(conn, { active: entry.capabilities })
  }

  /** A heartbeat seen on `conn` that the presence store did not take: an agent connection already here stays live. */
  keepAlive(conn: string): void {
    const entry = this.entries.get(conn)
    if (entry === undefined) return
    entry.lastHeartbeatMs = this.deps.nowMs()
    this.move(entry, 'ACTIVE')
  }

  /**
   * A 31990 of `pubkey` took effect: `conn` (its publisher, when a connection of this node) registers, and every
   * connection of that agent here takes its capabilities and load.
   */
  announced(conn: string | undefined, pubkey: string, tags: readonly string[][]): void {
    if (conn !== undefined && !this.entries.has(conn)) this.register(conn, pubkey, this.deps.nowMs())
    const capabilities = tags.filter((t) => t[0] === 'c' && t[1] !== undefined).map((t) => t[1] as string)
    const load = loadOf(tags)
    const concurrency = concurrencyOf(tags)
    for (const entry of this.entries.values()) {
      if (entry.pubkey !== pubkey) continue
      entry.capabilities = capabilities
      entry.load = load
      entry.concurrency = concurrency
      this.deps.changed?.(entry.conn, { active: capabilities })
    }
  }

  /**
   * The live connections offering `capability` now (docs/jobs.md#assignment): ACTIVE ones may get a job; a
   * SUSPECT one (a heartbeat late, its lease not lapsed) keeps the jobs it holds and gets none (`holdsOnly`).
   */
  candidatesFor(capability: string): { conn: string; pubkey: string; load?: number; concurrency: number; holdsOnly?: boolean }[] {
    const now = this.deps.nowMs()
    const out: { conn: string; pubkey: string; load?: number; concurrency: number; holdsOnly?: boolean }[] = []
    for (const e of this.entries.values()) {
      const state = agentStateAt(e.lastHeartbeatMs, now, this.deps.timing)
      if (!e.capabilities.includes(capability) || (state !== 'ACTIVE' && state !== 'SUSPECT')) continue
      const concurrency = e.concurrency.of.get(capability) ?? e.concurrency.all
      out.push({
        conn: e.conn,
        pubkey: e.pubkey,
        concurrency,
        ...(e.load === undefined ? {} : { load: e.load }),
        ...(state === 'SUSPECT' ? { holdsOnly: true } : {}),
      })
    }
    return out
  }

  /** Its goodbye was answered (the presence cleared). */
  goodbye(conn: string): void {
    this.close(conn, 'goodbye')
  }

  /** The connection left the community (Disconnect, or forgotten by the sweep): its lease live or lapsed. */
  left(conn: string): void {
    const entry = this.entries.get(conn)
    if (!entry) return
    const lapsed = agentStateAt(entry.lastHeartbeatMs, this.deps.nowMs(), this.deps.timing) === 'ZOMBIE'
    this.close(conn, lapsed ? 'lease_lapsed' : 'socket_closed')
  }

  /** The orphan scan: every state moved to now; answers the ZOMBIEs due for reaping (the caller closes them). */
  scan(): string[] {
    const now = this.deps.nowMs()
    const due: string[] = []
    for (const entry of this.entries.values()) {
      const state = agentStateAt(entry.lastHeartbeatMs, now, this.deps.timing)
      if (state === 'ZOMBIE' && entry.counted !== 'ZOMBIE') this.deps.changed?.(entry.conn, { gone: 'lapsed' })
      this.move(entry, state)
      if (isDueForReaping(entry.lastHeartbeatMs, now, this.deps.timing)) due.push(entry.conn)
    }
    this.publish()
    return due
  }

  /** Its socket is being closed by the scan. */
  reaped(conn: string): void {
    this.close(conn, 'reaped')
  }

  /** The community stopped: its gauge series go with it. */
  dispose(): void {
    for (const state of OPEN_STATES) this.deps.metrics.agentConnections.remove({ community: this.deps.community, state })
  }

  rows(nowMs: number): AgentRowHere[] {
    return [...this.entries.values()].map((e) => this.rowOf(e, nowMs))
  }

  counts(nowMs: number): Record<AgentConnectionState, number> {
    const out: Record<AgentConnectionState, number> = { ACTIVE: 0, SUSPECT: 0, ZOMBIE: 0, CLOSED: 0 }
    for (const e of this.entries.values()) out[agentStateAt(e.lastHeartbeatMs, nowMs, this.deps.timing)]++
    return out
  }

  stateOf(conn: string, nowMs: number): AgentConnectionState | undefined {
    const entry = this.entries.get(conn)
    return entry && agentStateAt(entry.lastHeartbeatMs, nowMs, this.deps.timing)
  }

  private rowOf(e: AgentEntry, nowMs: number): AgentRowHere {
    const state = agentStateAt(e.lastHeartbeatMs, nowMs, this.deps.timing)
    const heartbeatAgeMs = nowMs - e.lastHeartbeatMs
    return {
      conn: e.conn,
      pubkey: e.pubkey,
      state,
      capabilities: [...e.capabilities],
      ...(e.load === undefined ? {} : { load: e.load }),
      heartbeatAgeMs,
      leaseRemainingMs: leaseRemainingMs(e.lastHeartbeatMs, nowMs, this.deps.timing),
      connectedSinceMs: e.connectedSinceMs,
      // the rule, not a constant: a row decided here never trips it, a row carried elsewhere and aged there can
      flagged: state === 'ACTIVE' && heartbeatAgeMs > this.deps.timing.leaseMs,
    }
  }

  private register(conn: string, pubkey: string, nowMs: number): AgentEntry {
    const entry: AgentEntry = {
      conn,
      pubkey,
      connectedSinceMs: this.deps.wallMs(),
      lastHeartbeatMs: nowMs,
      heartbeats: 0,
      capabilities: [],
      concurrency: ONE_AT_A_TIME,
      counted: 'ACTIVE',
    }
    this.entries.set(conn, entry)
    this.tally.ACTIVE++
    this.publish()
    return entry
  }

  private move(entry: AgentEntry, to: OpenState): void {
    if (entry.counted === to) return
    this.tally[entry.counted]--
    this.tally[to]++
    entry.counted = to
    this.publish()
  }

  /** CLOSED: counted as a departure and removed at once. */
  private close(conn: string, cause: AgentDepartureCause): void {
    const entry = this.entries.get(conn)
    if (!entry) return
    this.entries.delete(conn)
    this.deps.changed?.(conn, { gone: 'closed' })
    this.tally[entry.counted]--
    this.deps.metrics.agentDepartures.inc({ cause })
    this.publish()
  }

  private publish(): void {
    for (const state of OPEN_STATES) this.deps.metrics.agentConnections.set({ community: this.deps.community, state }, this.tally[state])
  }
}

/** The announcement's `load` tag, 0..1 (docs/agent-registry.md); anything else is left out. */
function loadOf(tags: readonly string[][]): number | undefined {
  const raw = tags.find((t) => t[0] === 'load')?.[1]
  if (raw === undefined) return undefined
  const load = Number(raw)
  return Number.isFinite(load) && load >= 0 && load <= 1 ? load : undefined
}

/** jobs one agent connection takes at once (docs/jobs.md): a whole number from 1 to 1000 */
const MAX_CONCURRENCY = 1000

/** `all`: for capabilities without a tag of their own; `of`: per capability */
interface Concurrency {
  all: number
  of: Map<string, number>
}

const ONE_AT_A_TIME: Concurrency = { all: 1, of: new Map() }

/**
 * The announcement's `concurrency` tags: `["concurrency", n, capability]` for one capability, `["concurrency", n]`
 * for the others; a value that is not a whole number in range counts as 1. At most one per capability it offers.
 */
function concurrencyOf(tags: readonly string[][]): Concurrency {
  const whole = (raw: string | undefined) => {
    const n = Number(raw)
    return Number.isInteger(n) && n >= 1 && n <= MAX_CONCURRENCY ? n : 1
  }
  const out: Concurrency = { all: 1, of: new Map() }
  const offered = new Set(tags.filter((t) => t[0] === 'c').map((t) => t[1]))
  for (const t of tags) {
    if (t[0] !== 'concurrency') continue
    if (t[2] === undefined) out.all = whole(t[1])
    else if (offered.has(t[2])) out.of.set(t[2], whole(t[1]))
  }
  return out
}
