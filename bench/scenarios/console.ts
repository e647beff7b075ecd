// `console` (Apiary only): what one open console costs the relay. N AgentClients (3,000; quick 300) over the
// agents scenario's load processes keep one relay child busy with heartbeats; then its CPU is read over windows
// with the console closed and with one signed-in stream open on the agents view, alternated A B B A, and last
// over one window on the overview. The stream is read by a plain HTTP client, so no browser's CPU counts; the
// time between its snapshots is the update interval the page sees. `--console-pairs N` sets the pairs of
// windows (default 2), `--agent-shards K` the load processes (default 3).
import { type ConsoleCostOptions, type ConsoleCostResult, consoleCost } from '../lib/console-cost'
import { round2, rowsOf } from '../lib/figures'
import { type Context, defineScenario, nothingToPrepare, type Outcome } from '../lib/scenario'

function optionsOf(ctx: Context): Omit<ConsoleCostOptions, 'dir'> {
  const quick = ctx.quick
  return {
    agents: quick ? 300 : 3_000,
    shards: Number(ctx.option('agent-shards') ?? 3),
    waveSize: 50,
    waveSpacingMs: 20,
    settleMs: quick ? 3_000 : 10_000,
    windowMs: quick ? 8_000 : 20_000,
    pairs: Number(ctx.option('console-pairs') ?? 2),
  }
}

// in percent of one core: the target's unit, and a console's share is too small for two decimals of cores
const percent = (cores: number) => cores * 100

function figures(runs: Outcome<ConsoleCostResult>[]) {
  const cpu = rowsOf(runs, undefined, 'relay CPU')
  const stream = rowsOf(runs, undefined, 'one console on the agents view')
  return [
    cpu('console closed', '% of a core', (r) => percent(r.closedCores)),
    cpu('console open, agents view', '% of a core', (r) => percent(r.agentsViewCores)),
    cpu('console open, overview', '% of a core', (r) => percent(r.overviewCores)),
    cpu('added by the console, agents view', '% of a core', (r) => percent(r.agentsViewCores - r.closedCores)),
    cpu('added by the console, overview', '% of a core', (r) => percent(r.overviewCores - r.closedCores)),
    stream('snapshot interval p50', 'ms', (r) => r.interval.p50Ms),
    stream('snapshot interval p99', 'ms', (r) => r.interval.p99Ms),
    stream('snapshot interval max', 'ms', (r) => r.interval.maxMs),
    stream("snapshot interval p99, relay's clock", 'ms', (r) => r.relayInterval.p99Ms),
    stream("snapshot interval max, relay's clock", 'ms', (r) => r.relayInterval.maxMs),
    stream('snapshot size p50', 'KiB', (r) => r.bytesP50 / 1024),
    stream('first snapshot size', 'KiB', (r) => r.firstBytes / 1024),
    stream('agents listed (snapshot total)', 'count', (r) => r.agentsShown),
    stream('agents not ACTIVE at the end', 'count', (r) => r.agents - r.activeAfter),
  ]
}

function notesOf(runs: Outcome<ConsoleCostResult>[], o: Omit<ConsoleCostOptions, 'dir'>): string[] {
  const setup = `console: ${o.agents} agents over ${o.shards} load processes, settled ${o.settleMs / 1000} s; windows of ${o.windowMs / 1000} s, ${o.pairs} pairs closed/open (agents view, 100 rows a page) A B B A, then one on the overview`
  const perRound = runs.flatMap((r, i) =>
    r.ok
      ? [
          `console r${i + 1}: relay CPU per window (% of a core): ${r.value.windows.map((w) => `${w.view} ${round2(percent(w.cores))}`).join(', ')}`,
        ]
      : [],
  )
  return [setup, ...perRound]
}

export const scenario = defineScenario({
  name: 'console',
  describe: 'relay CPU with one console open on the agents view vs closed, over a fleet of AgentClients',
  needs: [],
  sides: () => ['apiary'] as const,
  prepare: nothingToPrepare,
  measure: (_side, _round, _prepared, ctx) => consoleCost({ ...optionsOf(ctx), dir: ctx.freshDir('apiary-console') }),
  report: (results, _prepared, ctx) => ({ figures: figures(results.apiary), notes: notesOf(results.apiary, optionsOf(ctx)) }),
})
