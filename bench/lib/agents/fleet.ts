// The agents of the agents scenario: real `AgentClient`s from the built package (apiary-relay/client, as a
// program that installed it runs it), one deterministic key each, in one load process. The fleet records what
// the scenario measures from the agents' side: state$ timestamps, how many are ACTIVE now, the causes of
// failed attempts, and every event each subscriber's application received.
import {
  type AgentClient,
  type AgentClientOptions,
  type AgentStateChange,
  loadClientPackage,
  type NostrEvent,
  type PublishResult,
} from '../../built-package'
import { benchKeys } from '../fixtures'

/** per subscriber (agent index): event id → times its application received it */
export type Deliveries = Map<number, Map<string, number>>

/**
 * Over every subscriber: deliveries, deliveries beyond the first of an id, expected ids never delivered, and
 * the first few of those as `subscriber:id`.
 */
export function deliveryFigures(
  deliveries: Deliveries,
  expected: Iterable<string>,
): { deliveries: number; duplicates: number; missing: number; missed: string[] } {
  const ids = [...expected]
  let delivered = 0
  let duplicates = 0
  let missing = 0
  const missed: string[] = []
  for (const [subscriber, seen] of deliveries) {
    for (const n of seen.values()) {
      delivered += n
      duplicates += n - 1
    }
    for (const id of ids) {
      if (seen.has(id)) continue
      missing++
      if (missed.length < 5) missed.push(`${subscriber}:${id}`)
    }
  }
  return { deliveries: delivered, duplicates, missing, missed }
}

export interface TrackedAgent {
  readonly agent: AgentClient
  index: number
  /** performance.now() of start(), of the first DISCOVERED / AUTHENTICATED / ACTIVE after it */
  startedAt: number
  discoveredAt: number
  authenticatedAt: number
  activeAt: number
  /** the latest transition into ACTIVE */
  lastActiveAt: number
}

/** Why an attempt failed, without its numbers ("reconnecting in 2150 ms", ports, pubkeys). */
export function causeCategory(cause: string): string {
  const why = cause.replace(/; reconnecting in \d+ ms$/, '')
  if (/refused AUTH: rate-limited/.test(why)) return 'AUTH rate-limited (shaped)'
  if (/no relay answered NIP-11/.test(why)) return 'NIP-11 unreachable'
  if (/the relay closed the connection/.test(why)) return `connection closed (${/\((\d+)/.exec(why)?.[1] ?? '?'})`
  return why
    .replace(/[0-9a-f]{64}/g, '<hex>')
    .replace(/\d+/g, 'N')
    .slice(0, 80)
}

export class AgentFleet {
  readonly agents: TrackedAgent[]
  /** agents whose current state is ACTIVE */
  active = 0
  closed = 0
  /** INIT transitions (failed attempts) by causeCategory, while `recordCauses` is on */
  causes: Record<string, number> = {}
  recordCauses = false
  /** per subscriber (its index): event id → times the application's onEvent got it */
  readonly deliveries: Deliveries = new Map()

  private constructor(agents: TrackedAgent[]) {
    this.agents = agents
  }

  /**
   * Creates `count` agents (each `new AgentClient` derives its pubkey, so this runs before any clock). Keys:
   * benchKeys `label`, from index `first`
   * (the agents' `index`), so shards of one fleet hold disjoint keys.
   */
  static async create(
    url: string,
    count: number,
    first = 0,
    label = 'agents',
    options: Partial<AgentClientOptions> = {},
  ): Promise<AgentFleet> {
    const { AgentClient: Client } = await loadClientPackage()
    const keys = benchKeys(count, label, first)
    const agents = keys.map((key, i) => {
      const index = first + i
      const agent = new Client({ relays: [url], secretKey: key.secret, capabilities: [{ name: 'bench-job', kinds: [5050] }], ...options })
      return {
        agent,
        index,
        startedAt: Number.NaN,
        discoveredAt: Number.NaN,
        authenticatedAt: Number.NaN,
        activeAt: Number.NaN,
        lastActiveAt: Number.NaN,
      }
    })
    const fleet = new AgentFleet(agents)
    for (const t of agents) fleet.track(t)
    return fleet
  }

  private track(t: TrackedAgent): void {
    let previous: AgentStateChange['state'] = 'INIT'
    t.agent.state$.subscribe(({ state, cause }) => {
      const now = performance.now()
      if (previous === 'ACTIVE' && state !== 'ACTIVE') this.active--
      if (state === 'ACTIVE' && previous !== 'ACTIVE') {
        this.active++
        t.lastActiveAt = now
        if (Number.isNaN(t.activeAt) && !Number.isNaN(t.startedAt)) t.activeAt = now
      }
      if (state === 'DISCOVERED' && Number.isNaN(t.discoveredAt) && !Number.isNaN(t.startedAt)) t.discoveredAt = now
      if (state === 'AUTHENTICATED' && Number.isNaN(t.authenticatedAt) && !Number.isNaN(t.startedAt)) t.authenticatedAt = now
      if (state === 'CLOSED') this.closed++
      // every failed attempt schedules a reconnect with an INIT transition (also INIT → INIT: NIP-11 unreachable)
      if (state === 'INIT' && this.recordCauses && cause) {
        const c = causeCategory(cause)
        this.causes[c] = (this.causes[c] ?? 0) + 1
      }
      previous = state
    })
  }

  /** Starts `t` and resolves at its first ACTIVE (rejects with the AgentError of a terminal refusal). */
  start(t: TrackedAgent): Promise<void> {
    t.startedAt = performance.now()
    return t.agent.start()
  }

  /** subscribes agent `t`; every event its application receives is counted by id */
  subscribe(t: TrackedAgent, filter: Record<string, unknown>): void {
    const seen = new Map<string, number>()
    this.deliveries.set(t.index, seen)
    t.agent.subscribe([filter], (e: NostrEvent) => seen.set(e.id, (seen.get(e.id) ?? 0) + 1))
  }

  reconnects(): number {
    return this.agents.reduce((sum, t) => sum + t.agent.metrics().reconnects, 0)
  }

  /** graceful goodbyes, `parallel` at a time: each signs an "offline" and awaits its OK (2 s bound, re-sent) */
  async stopAll(parallel = 100): Promise<void> {
    for (let i = 0; i < this.agents.length; i += parallel) await Promise.all(this.agents.slice(i, i + parallel).map((t) => t.agent.stop()))
  }
}

/** The ids of publishes that must be stored: acknowledged (OK true) and queued (held for the reconnect). */
export class PublishLedger {
  readonly acked = new Set<string>()
  readonly queued = new Set<string>()
  readonly refused: Record<string, number> = {}
  /** event id → created_at (unix seconds) */
  readonly createdAt = new Map<string, number>()
  private readonly pending = new Set<Promise<void>>()

  record(result: Promise<PublishResult>, createdAt?: number): Promise<PublishResult> {
    const p = result.then((r) => {
      if (createdAt !== undefined) this.createdAt.set(r.id, createdAt)
      if (r.ok) this.acked.add(r.id)
      else if (r.queued) this.queued.add(r.id)
      else {
        const prefix = r.reason.split(':')[0] ?? r.reason
        this.refused[prefix] = (this.refused[prefix] ?? 0) + 1
      }
    })
    this.pending.add(p)
    void p.finally(() => this.pending.delete(p))
    return result
  }

  /** every publish recorded so far has its result */
  async settled(): Promise<void> {
    await Promise.all([...this.pending])
  }

  all(): Set<string> {
    return new Set([...this.acked, ...this.queued])
  }
}
