// What each community accepted, refused and delivered, for the console: cumulative counts bumped in O(1) where
// the metrics count the same things (the connection's OK and CLOSED answers, the community's deliveries),
// turned into per-second rates by the node sampler each interval. Passed through deps, one set per node.

export class CommunityCounters {
  /** events answered OK true, by kind */
  readonly acceptedByKind = new Map<number, number>()
  /** OK false and CLOSED answers, by reason prefix (`rate-limited`, `restricted`, ...) */
  readonly refusedByPrefix = new Map<string, number>()
  /** live EVENT frames queued to subscribers */
  delivered = 0

  accepted(kind: number): void {
    this.acceptedByKind.set(kind, (this.acceptedByKind.get(kind) ?? 0) + 1)
  }

  refused(prefix: string): void {
    this.refusedByPrefix.set(prefix, (this.refusedByPrefix.get(prefix) ?? 0) + 1)
  }

  deliveredOut(n: number): void {
    this.delivered += n
  }
}

/** Every community's counters on this node, made on first use. */
export class ConsoleCounters {
  private readonly byCommunity = new Map<string, CommunityCounters>()

  of(community: string): CommunityCounters {
    let c = this.byCommunity.get(community)
    if (!c) {
      c = new CommunityCounters()
      this.byCommunity.set(community, c)
    }
    return c
  }

  entries(): IterableIterator<[string, CommunityCounters]> {
    return this.byCommunity.entries()
  }
}

/** One community's rates over an interval, and the node's sums of them. */
export interface CounterRates {
  eventsPerSecondByKind: Record<string, number>
  refusalsPerSecondByReason: Record<string, number>
  eventsInPerSecond: number
  eventsOutPerSecond: number
}

interface Previous {
  accepted: Map<number, number>
  refused: Map<string, number>
  delivered: number
}

/** Turns cumulative counts into rates: each call is one interval, measured from the call before. */
export class CounterRater {
  private readonly previous = new Map<string, Previous>()

  rate(community: string, c: CommunityCounters, seconds: number): CounterRates {
    const before = this.previous.get(community)
    const per = (now: number, then: number | undefined) => round((now - (then ?? 0)) / Math.max(seconds, 0.001))
    const eventsPerSecondByKind: Record<string, number> = {}
    let eventsInPerSecond = 0
    for (const [kind, n] of c.acceptedByKind) {
      const r = per(n, before?.accepted.get(kind))
      if (r > 0) eventsPerSecondByKind[kind] = r
      eventsInPerSecond += r
    }
    const refusalsPerSecondByReason: Record<string, number> = {}
    for (const [prefix, n] of c.refusedByPrefix) {
      const r = per(n, before?.refused.get(prefix))
      if (r > 0) refusalsPerSecondByReason[prefix] = r
    }
    const eventsOutPerSecond = per(c.delivered, before?.delivered)
    this.previous.set(community, { accepted: new Map(c.acceptedByKind), refused: new Map(c.refusedByPrefix), delivered: c.delivered })
    return { eventsPerSecondByKind, refusalsPerSecondByReason, eventsInPerSecond: round(eventsInPerSecond), eventsOutPerSecond }
  }
}

/** a rate as the console shows it: two decimals */
export const round = (n: number) => Math.round(n * 100) / 100
