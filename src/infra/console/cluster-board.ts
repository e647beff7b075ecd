// One node's side of the status board: every interval it publishes its status (and its agent rows while a
// console watches them), reads every node's, and keeps per node the charts' points of the last 10 minutes.
// A node whose last status is older than GONE_AFTER_INTERVALS intervals is shown as gone, and forgotten
// KEPT_MS after it last published. Wall-clock times: the statuses come from other machines.
import type { AgentRow, NodeSample, NodeStatus, NodeView } from '../../protocols/console.js'
import type { Logger } from '../log.js'
import type { StatusBoard } from './status-board.js'

export const GONE_AFTER_INTERVALS = 3
/** how long the board lists a gone node, and how far back the charts go */
export const KEPT_MS = 10 * 60_000
/** a console that shows agents renews the watch at least this often; nodes stop publishing rows once it lapses */
export const WATCH_AGENTS_MS = 10_000

export interface ClusterBoardDeps {
  board: StatusBoard
  node: string
  intervalMs: number
  /** ms since the epoch */
  nowMs: () => number
  /** this node's status now */
  collect: () => Promise<NodeStatus>
  /** this node's agent rows now (every community) */
  agentRows: () => AgentRow[]
  log: Pick<Logger, 'warn'>
}

export class ClusterBoard {
  private readonly views = new Map<string, NodeStatus>()
  private readonly samplesOf = new Map<string, NodeSample[]>()
  private otherAgents = new Map<string, AgentRow[]>()
  private watchedHereUntilMs = 0
  private watchSentAtMs = 0
  private timer: ReturnType<typeof setInterval> | undefined
  private running: Promise<void> | undefined
  private failing = false

  constructor(private readonly d: ClusterBoardDeps) {}

  start(): void {
    void this.tick()
    this.timer = setInterval(() => void this.tick(), this.d.intervalMs)
    this.timer.unref()
  }

  async stop(): Promise<void> {
    clearInterval(this.timer)
    await this.running
  }

  /** one interval's publish and read; a tick still running when the next is due is not doubled */
  tick(): Promise<void> {
    this.running ??= this.publishAndRead()
      .then(
        () => {
          this.failing = false
        },
        (error: unknown) => {
          // once per outage, not every interval of it
          if (!this.failing) this.d.log.warn({ err: error }, 'console status board unavailable')
          this.failing = true
        },
      )
      .finally(() => {
        this.running = undefined
      })
    return this.running
  }

  nodes(): NodeView[] {
    const now = this.d.nowMs()
    const goneBeforeMs = now - GONE_AFTER_INTERVALS * this.d.intervalMs
    return [...this.views.values()]
      .filter((s) => s.publishedAtMs >= now - KEPT_MS)
      .sort((a, b) => a.node.localeCompare(b.node))
      .map((status) => ({ status, gone: status.publishedAtMs < goneBeforeMs }))
  }

  samples(afterMs: number): Record<string, NodeSample[]> {
    const out: Record<string, NodeSample[]> = {}
    for (const [node, ring] of this.samplesOf) out[node] = ring.filter((p) => p.atMs > afterMs)
    return out
  }

  /** the agent rows other nodes published (this node's are current where they are asked for) */
  agentsElsewhere(): ReadonlyMap<string, AgentRow[]> {
    return this.otherAgents
  }

  /** a console here shows agents: the cluster's nodes publish theirs for the next WATCH_AGENTS_MS */
  watchAgents(): void {
    const now = this.d.nowMs()
    this.watchedHereUntilMs = now + WATCH_AGENTS_MS
    // renewed at most every few seconds however often the console asks
    if (now - this.watchSentAtMs < WATCH_AGENTS_MS / 3) return
    this.watchSentAtMs = now
    this.d.board.watchAgents(WATCH_AGENTS_MS).catch((error: unknown) => this.d.log.warn({ err: error }, 'console watch not set'))
  }

  private async publishAndRead(): Promise<void> {
    const status = await this.d.collect()
    const watched = await this.d.board.agentsWatched()
    await this.d.board.publish(status, watched ? this.d.agentRows() : undefined, KEPT_MS)
    const now = this.d.nowMs()
    const statuses = await this.d.board.statuses(now - KEPT_MS)
    for (const s of [status, ...statuses]) this.record(s)
    for (const node of this.views.keys()) if (this.views.get(node)!.publishedAtMs < now - KEPT_MS) this.forget(node)
    const others = [...this.views.keys()].filter((n) => n !== this.d.node)
    this.otherAgents = this.watchedHereUntilMs > now ? await this.d.board.agents(others) : new Map()
  }

  private record(s: NodeStatus): void {
    const known = this.views.get(s.node)
    if (known && known.publishedAtMs >= s.publishedAtMs) return
    this.views.set(s.node, s)
    let ring = this.samplesOf.get(s.node)
    if (!ring) {
      ring = []
      this.samplesOf.set(s.node, ring)
    }
    ring.push(toSample(s))
    while (ring.length > 0 && ring[0]!.atMs < s.publishedAtMs - KEPT_MS) ring.shift()
  }

  private forget(node: string): void {
    this.views.delete(node)
    this.samplesOf.delete(node)
  }
}

function toSample(s: NodeStatus): NodeSample {
  return {
    atMs: s.publishedAtMs,
    connections: s.connections,
    eventsInPerSecond: s.eventsInPerSecond,
    eventsOutPerSecond: s.eventsOutPerSecond,
    loopDelayP99Ms: s.loopDelayP99Ms,
    rssBytes: s.rssBytes,
    cpuPercent: s.cpuPercent,
  }
}
