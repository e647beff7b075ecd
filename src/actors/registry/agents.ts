// Who the agent registry of one community tracks on this node (docs/agent-registry.md): pubkeys seen here
// with a live lease and an announcement ('agent'), checked and found without one ('none'), being checked
// ('checking'), or whose goodbye is being cleared ('leaving': the sweep leaves them to the goodbye, so one
// goodbye makes one departure). Only 'agent' and 'leaving' entries can depart. The live gauge follows it.
import type { Metrics } from '../../infra/metrics.js'

export type AgentState = 'agent' | 'none' | 'checking' | 'leaving'

export class Agents {
  private readonly byPubkey = new Map<string, AgentState>()
  /** checked pubkeys whose announcement took effect meanwhile: it went live then, its lookup must not resend it */
  private readonly announcedWhileChecking = new Set<string>()
  /** when a 'checking' or 'leaving' entry began (seconds) */
  private readonly sinceSeconds = new Map<string, number>()

  constructor(private readonly gauge: Pick<Metrics, 'agentsLive'>['agentsLive']) {}

  get(pubkey: string): AgentState | undefined {
    return this.byPubkey.get(pubkey)
  }

  /** `nowSeconds`: when a 'checking' or 'leaving' entry begins (the sweep forgets it past transientMaxSeconds) */
  set(pubkey: string, next: AgentState, nowSeconds = 0): void {
    const was = this.byPubkey.get(pubkey)
    if (next !== 'checking') this.announcedWhileChecking.delete(pubkey)
    if (was === next) return
    if (next === 'checking' || next === 'leaving') this.sinceSeconds.set(pubkey, nowSeconds)
    else this.sinceSeconds.delete(pubkey)
    this.byPubkey.set(pubkey, next)
    if (next === 'agent') this.gauge.inc()
    else if (was === 'agent') this.gauge.dec()
  }

  /** an announcement of `pubkey` took effect (and was offered live) */
  announced(pubkey: string): void {
    if (this.byPubkey.get(pubkey) === 'checking') this.announcedWhileChecking.add(pubkey)
  }

  /** its lookup raced its announcement, which was offered live already */
  wasAnnouncedWhileChecking(pubkey: string): boolean {
    return this.announcedWhileChecking.has(pubkey)
  }

  /** true when it was an agent (whose departure is due) */
  delete(pubkey: string): boolean {
    const was = this.byPubkey.get(pubkey)
    this.byPubkey.delete(pubkey)
    this.announcedWhileChecking.delete(pubkey)
    this.sinceSeconds.delete(pubkey)
    if (was === 'agent') this.gauge.dec()
    return was === 'agent'
  }

  /** 'checking' and 'leaving' entries begun before `beforeSeconds`: their answer is not coming */
  stale(beforeSeconds: number): [string, AgentState][] {
    return [...this.sinceSeconds].filter(([, t]) => t < beforeSeconds).map(([p]) => [p, this.byPubkey.get(p) as AgentState])
  }

  /** the registry stopped (its community archived, or the node closing): its agents no longer count on this node */
  clear(): void {
    for (const pubkey of [...this.byPubkey.keys()]) this.delete(pubkey)
  }

  live(): string[] {
    return [...this.byPubkey].filter(([, s]) => s === 'agent').map(([p]) => p)
  }

  entries(): IterableIterator<[string, AgentState]> {
    return this.byPubkey.entries()
  }
}
