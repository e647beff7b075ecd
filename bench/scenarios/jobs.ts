// `jobs` (Apiary, embedded SQLite): dispatched jobs end to end (docs/jobs.md). 100 agents offer one capability
// (concurrency 8 each) and answer every job with `processing` then the result. Two loads: at saturation (4
// requesters keeping 50 jobs each in flight: jobs/s), and at a fixed rate below it (500 jobs/s offered: how long
// a job waits for its assignment when the relay is not saturated). Baseline column: the same work as plain NIP-90
// broadcast to the same agents, at saturation (every agent hears and does every request: fewer jobs, the
// duplicates counted).
import { cpuPerUnitUs, outcomeNotes, pick, rowsOf } from '../lib/figures'
import { type JobsMode, type JobsResult, runJobs } from '../lib/load/jobs'
import { withRelay } from '../lib/relay-process'
import { type Spanned, withRelaySpan } from '../lib/relay-span'
import { type Context, defineScenario, type Figure, type Outcome } from '../lib/scenario'

const LOAD = { agents: 100, requesters: 4, window: 50 }
const PACED_RATE = 500
export const SATURATION_GROUP = `saturation: ${LOAD.agents} agents, ${LOAD.requesters} × ${LOAD.window} in flight`
export const PACED_GROUP = `fixed rate: ${LOAD.agents} agents, ${PACED_RATE} jobs/s`
const jobsOf = (mode: JobsMode, ctx: Context) => (mode === 'dispatch' ? (ctx.quick ? 2_000 : 10_000) : ctx.quick ? 100 : 300)
const SIDES: Record<'dispatch' | 'broadcast (NIP-90)', JobsMode> = { dispatch: 'dispatch', 'broadcast (NIP-90)': 'broadcast' }
type Side = keyof typeof SIDES

interface Loads {
  saturated: Spanned<JobsResult>
  paced?: Spanned<JobsResult>
}

async function measure(mode: JobsMode, ctx: Context): Promise<Loads> {
  const run = (extra: { ratePerSec?: number; jobs: number }) =>
    withRelay('apiary', ctx.freshDir(`jobs-${mode}`), (relay) =>
      withRelaySpan(relay, (hooks) => runJobs(relay.url, { mode, ...LOAD, maxSeconds: 60, ...extra, ...hooks })),
    )
  const saturated = await run({ jobs: jobsOf(mode, ctx) })
  if (mode === 'broadcast') return { saturated }
  return { saturated, paced: await run({ ratePerSec: PACED_RATE, jobs: ctx.quick ? 1_500 : 5_000 }) }
}

/** the fixed-rate load of each round (dispatch only runs one) */
const pacedOf = (outcomes: readonly Outcome<Loads>[] | undefined): Outcome<Spanned<JobsResult>>[] =>
  (outcomes ?? []).map((o) => (!o.ok ? o : o.value.paced ? { ok: true, value: o.value.paced } : { ok: false, error: 'not run' }))

const figuresOf = (row: ReturnType<typeof rowsOf<Spanned<JobsResult>>>): Figure[] => [
  row('jobs completed', '/s', (r) => r.jobsPerSec),
  row('relay CPU per job', 'µs', (r) => cpuPerUnitUs(r.relayCores, r.jobsPerSec)),
  row('assignment p50', 'ms', (r) => r.assignment.p50Ms),
  row('assignment p99', 'ms', (r) => r.assignment.p99Ms),
  row('request→result p50', 'ms', (r) => r.endToEnd.p50Ms),
  row('request→result p99', 'ms', (r) => r.endToEnd.p99Ms),
  row('jobs done more than once', 'extra results', (r) => r.duplicated),
  row('jobs completed (count)', 'count', (r) => r.completed),
  row('requests refused', 'count', (r) => r.refused),
  row('event-loop delay p99', 'ms', (r) => r.loopDelay.p99Ms),
  row('relay CPU', 'cores', (r) => r.relayCores),
]

export const scenario = defineScenario({
  name: 'jobs',
  describe: 'dispatched jobs end to end with 100 agents: at saturation and at 500 jobs/s, against NIP-90 broadcast',
  needs: [],
  sides: () => Object.keys(SIDES) as Side[],
  prepare: async () => undefined,
  measure: (side: Side, _round, _p, ctx) => measure(SIDES[side], ctx),
  report: (results, _p, ctx) => ({
    figures: [
      ...figuresOf(rowsOf(pick(results.dispatch, 'saturated'), pick(results['broadcast (NIP-90)'], 'saturated'), SATURATION_GROUP)),
      ...figuresOf(rowsOf(pacedOf(results.dispatch), undefined, PACED_GROUP)),
    ],
    notes: [
      `jobs: dispatch ${jobsOf('dispatch', ctx)} jobs at saturation, broadcast ${jobsOf('broadcast', ctx)} (each is done by every agent)`,
      ...outcomeNotes('jobs dispatch, saturation', pick(results.dispatch, 'saturated')),
      ...outcomeNotes('jobs dispatch, fixed rate', pacedOf(results.dispatch)),
      ...outcomeNotes('jobs broadcast', pick(results['broadcast (NIP-90)'], 'saturated')),
    ],
  }),
})
