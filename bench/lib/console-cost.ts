// The console scenario's run: one Apiary child, N AgentClients over the agents scenario's load processes
// (bench/lib/agents/shards.ts), all ACTIVE and settled; then measured windows of the relay's CPU with the
// console closed and open, alternated A B B A ... so that a drift of the machine's load falls on both sides
// alike, and last one window open on the overview. "Open" is one signed-in stream (bench/lib/console-viewer.ts)
// on the agents view, the costliest: every agent row is gathered, filtered and paged each second.
import { askAll, fleetStatus, forkShard, type Shard, shareOf, sleep } from './agents/shards'
import { httpOriginOf, mergeStreams, openStream, type StreamFigures, signIn } from './console-viewer'
import type { Latency } from './load/latency'
import { type RelayProcess, spawnRelay } from './relay-process'

export interface ConsoleCostOptions {
  agents: number
  /** load processes the fleet is spread over */
  shards: number
  /** agents started per wave over all shards, one wave every waveSpacingMs (as in the agents scenario) */
  waveSize: number
  waveSpacingMs: number
  /** after the last agent is ACTIVE, before the first window: the start-up's work drains */
  settleMs: number
  windowMs: number
  /** pairs of windows (closed, open), alternated A B B A ... */
  pairs: number
  dir: string
}

export type WindowView = 'closed' | 'agents' | 'overview'

export interface ConsoleCostResult {
  agents: number
  /** ACTIVE when the first window began, and after the last */
  activeBefore: number
  activeAfter: number
  /** relay CPU per window in cores, in the order measured */
  windows: { view: WindowView; cores: number }[]
  closedCores: number
  agentsViewCores: number
  overviewCores: number
  /** the agents view's streams, over all its windows */
  interval: Latency
  /** the same intervals by the relay's clock (the snapshots' atMs) */
  relayInterval: Latency
  bytesP50: number
  firstBytes: number
  snapshots: number
  /** `agents.total` in the last agents-view snapshot: the rows the relay had to page */
  agentsShown: number
}

const mean = (xs: number[]) => (xs.length ? xs.reduce((s, x) => s + x, 0) / xs.length : Number.NaN)

/** closed, agents, agents, closed, closed, agents, ... for `pairs` pairs, then one overview window */
export function windowOrder(pairs: number): WindowView[] {
  const order: WindowView[] = []
  for (let i = 0; i < pairs; i++) order.push(...(i % 2 === 0 ? (['closed', 'agents'] as const) : (['agents', 'closed'] as const)))
  return [...order, 'overview']
}

export async function consoleCost(opts: ConsoleCostOptions): Promise<ConsoleCostResult> {
  const relay = await spawnRelay('apiary', opts.dir)
  const shards: Shard[] = []
  try {
    for (let k = 0; k < opts.shards; k++) shards.push(forkShard(`shard ${k + 1}`))
    await askAll(shards, (k) => ({
      type: 'Create',
      url: relay.url,
      first: Math.floor((k * opts.agents) / opts.shards),
      count: shareOf(opts.agents, k, opts.shards),
    }))
    try {
      await startFleet(shards, opts)
      const activeBefore = (await fleetStatus(shards)).active
      const measured = await measureWindows(relay, opts)
      const activeAfter = (await fleetStatus(shards)).active
      return { agents: opts.agents, activeBefore, activeAfter, ...measured }
    } finally {
      await askAll(shards, { type: 'StopAll' }, 120_000).catch((e: Error) => process.stderr.write(`    ${e.message}\n`))
    }
  } finally {
    await Promise.all(shards.map((s) => s.close()))
    await relay.close()
  }
}

async function startFleet(shards: Shard[], opts: ConsoleCostOptions): Promise<void> {
  const waveSize = Math.ceil(opts.waveSize / shards.length)
  await askAll(shards, { type: 'StartInWaves', waveSize, spacingMs: opts.waveSpacingMs * shards.length })
  const { active } = await fleetStatus(shards)
  if (active < opts.agents) throw new Error(`only ${active} of ${opts.agents} agents ACTIVE after start-up`)
  await sleep(opts.settleMs)
}

async function measureWindows(relay: RelayProcess, opts: ConsoleCostOptions) {
  const origin = httpOriginOf(relay.url)
  const cookie = await signIn(origin, opts.dir)
  const windows: ConsoleCostResult['windows'] = []
  const agentStreams: StreamFigures[] = []
  for (const view of windowOrder(opts.pairs)) {
    const w = await measureWindow(relay, origin, cookie, view, opts.windowMs)
    windows.push({ view, cores: w.cores })
    if (view === 'agents' && w.stream) agentStreams.push(w.stream)
  }
  const coresOf = (v: WindowView) => mean(windows.filter((w) => w.view === v).map((w) => w.cores))
  return {
    windows,
    closedCores: coresOf('closed'),
    agentsViewCores: coresOf('agents'),
    overviewCores: coresOf('overview'),
    ...mergeStreams(agentStreams),
    agentsShown: agentStreams.at(-1)?.agentsTotal ?? 0,
  }
}

/** The relay's CPU over one window, in cores; with a stream open on `view` from before the window to its end. */
async function measureWindow(relay: RelayProcess, origin: string, cookie: string, view: WindowView, windowMs: number) {
  const stream = view === 'closed' ? undefined : await openStream(origin, cookie, view)
  try {
    await stream?.ready
    const cpu0 = await relay.cpuMicros()
    const t0 = performance.now()
    await sleep(windowMs)
    const cpu1 = await relay.cpuMicros()
    const seconds = (performance.now() - t0) / 1000
    return { cores: (cpu1 - cpu0) / 1e6 / seconds, stream: stream?.close() }
  } finally {
    stream?.close()
  }
}
