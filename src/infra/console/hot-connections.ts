// The node's busiest connections (docs/operating.md#node-status-and-hot-connections): once a second every live
// connection's meter takes a reading, and each ranking keeps its top HOT_TOP_K by a bounded insertion, so a
// tick costs O(N) with N connections and never sorts them all. The same pass tallies each community's
// connections and subscriptions, read from the connections themselves rather than asked of the actors.
import { type AgentConnectionState, HOT_RANKINGS, HOT_TOP_K, type HotConnectionRow, type HotRanking } from '../../protocols/console.js'
import type { TrafficMeter, TrafficRates } from '../ws/traffic-meter.js'

/** What the sampler reads of one live connection (the gateway's view of it). */
export interface MeteredConnection {
  readonly id: string
  readonly community: string
  /** as the trusted-proxy rule resolves it */
  readonly ip: string
  readonly meter: TrafficMeter
  readonly authed: ReadonlySet<string>
  readonly subs: { readonly size: number }
}

export interface HotConnectionsDeps {
  node: string
  /** the agent state of a connection (the community's agent connections), when it registered as one */
  agentStateOf?: (community: string, conn: string, nowMs: number) => AgentConnectionState | undefined
}

export interface CommunityLoad {
  connections: number
  subscriptions: number
}

interface Ranked {
  conn: MeteredConnection
  rates: TrafficRates
}

export class HotConnections {
  private readonly top = new Map<HotRanking, Ranked[]>(HOT_RANKINGS.map((r) => [r, []]))
  private readonly scratch: TrafficRates = { inFramesPerSecond: 0, inBytesPerSecond: 0, outBytesPerSecond: 0 }
  private latest = new Map<HotRanking, HotConnectionRow[]>()
  private load = new Map<string, CommunityLoad>()

  constructor(private readonly d: HotConnectionsDeps) {}

  /** one tick: a reading of every meter, the rankings and the communities' tallies as of `nowMs` */
  sample(conns: Iterable<MeteredConnection>, nowMs: number): void {
    for (const list of this.top.values()) list.length = 0
    const load = new Map<string, CommunityLoad>()
    for (const c of conns) {
      c.meter.read(nowMs)
      const rates = c.meter.rates(this.scratch)
      let copy: TrafficRates | undefined
      for (const ranking of HOT_RANKINGS) {
        if (rates[ranking] <= 0) continue
        const list = this.top.get(ranking)!
        if (list.length === HOT_TOP_K && list[HOT_TOP_K - 1]!.rates[ranking] >= rates[ranking]) continue
        copy ??= { ...rates }
        insertBounded(list, { conn: c, rates: copy }, ranking)
      }
      const l = load.get(c.community)
      if (l) {
        l.connections++
        l.subscriptions += c.subs.size
      } else load.set(c.community, { connections: 1, subscriptions: c.subs.size })
    }
    this.load = load
    this.latest = new Map(HOT_RANKINGS.map((r) => [r, this.top.get(r)!.map((e) => this.toRow(e, nowMs))]))
  }

  /** the top HOT_TOP_K of the last tick by `ranking`, busiest first */
  rows(ranking: HotRanking): HotConnectionRow[] {
    return this.latest.get(ranking) ?? []
  }

  /** every connection in any ranking, once: what the node publishes (the board merges per ranking) */
  union(): HotConnectionRow[] {
    const seen = new Map<string, HotConnectionRow>()
    for (const rows of this.latest.values()) for (const r of rows) seen.set(r.conn, r)
    return [...seen.values()]
  }

  /** connections and subscriptions per community at the last tick */
  communities(): ReadonlyMap<string, CommunityLoad> {
    return this.load
  }

  private toRow({ conn, rates }: Ranked, nowMs: number): HotConnectionRow {
    const agentState = this.d.agentStateOf?.(conn.community, conn.id, nowMs)
    return {
      node: this.d.node,
      conn: conn.id,
      community: conn.community,
      pubkeys: [...conn.authed],
      ip: conn.ip,
      subscriptions: conn.subs.size,
      ...(agentState !== undefined && { agentState }),
      inFramesPerSecond: round(rates.inFramesPerSecond),
      inBytesPerSecond: round(rates.inBytesPerSecond),
      outBytesPerSecond: round(rates.outBytesPerSecond),
    }
  }
}

/** into `list` (descending by `ranking`, at most HOT_TOP_K long), dropping what falls off its end */
function insertBounded(list: Ranked[], entry: Ranked, ranking: HotRanking): void {
  let i = list.length
  while (i > 0 && list[i - 1]!.rates[ranking] < entry.rates[ranking]) i--
  list.splice(i, 0, entry)
  if (list.length > HOT_TOP_K) list.length = HOT_TOP_K
}

/** Merges several nodes' rows into the cluster's top HOT_TOP_K by `ranking` (at most K × nodes rows). */
export function mergeHot(rows: Iterable<HotConnectionRow>, ranking: HotRanking): HotConnectionRow[] {
  const list = [...rows].filter((r) => r[ranking] > 0)
  list.sort((a, b) => b[ranking] - a[ranking])
  return list.slice(0, HOT_TOP_K)
}

const round = (n: number) => Math.round(n * 10) / 10
