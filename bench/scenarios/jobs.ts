// `jobs` (Apiary, embedded SQLite): dispatched jobs end to end (docs/jobs.md). 100 agents offer one capability
// (concurrency 8 each), 4 requesters keep 50 jobs each in flight; every agent answers `processing` then the
// result. Apiary column: dispatch (each job to exactly one agent); baseline column: the same work as plain NIP-90
// broadcast to the same agents (every agent hears and does every request: fewer jobs, the duplicates counted).
import { cpuPerUnitUs, outcomeNotes, rowsOf } from '../lib/figures'
import { type JobsMode, type JobsResult, runJobs } from '../lib/load/jobs'
import { withRelay } from '../lib/relay-process'
import { type Spanned, withRelaySpan } from '../lib/relay-span'
import { type Context, defineScenario } from '../lib/scenario'

const LOAD = { agents: 100, requesters: 4, window: 50 }
const jobsOf = (mode: JobsMode, ctx: Context) => (mode === 'dispatch' ? (ctx.quick ? 2_000 : 10_000) : ctx.quick ? 100 : 300)
const SIDES: Record<'dispatch' | 'broadcast (NIP-90)', JobsMode> = { dispatch: 'dispatch', 'broadcast (NIP-90)': 'broadcast' }
type Side = keyof typeof SIDES

export const scenario = defineScenario({
  name: 'jobs',
  describe: 'dispatched jobs end to end, 100 agents, against the same work broadcast NIP-90 style',
  needs: [],
  sides: () => Object.keys(SIDES) as Side[],
  prepare: async () => undefined,
  measure: async (side: Side, _round, _p, ctx): Promise<Spanned<JobsResult>> => {
    const mode = SIDES[side]
    return withRelay('apiary', ctx.freshDir(`jobs-${mode}`), (relay) =>
      withRelaySpan(relay, (hooks) => runJobs(relay.url, { mode, ...LOAD, jobs: jobsOf(mode, ctx), maxSeconds: 60, ...hooks })),
    )
  },
  report: (results, _p, ctx) => {
    const row = rowsOf(results.dispatch, results['broadcast (NIP-90)'], `${LOAD.agents} agents, ${LOAD.requesters} × ${LOAD.window} in flight`)
    return {
      figures: [
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
      ],
      notes: [
        `jobs: dispatch ${jobsOf('dispatch', ctx)} jobs, broadcast ${jobsOf('broadcast', ctx)} (each is done by every agent)`,
        ...(Object.keys(SIDES) as Side[]).flatMap((s) => outcomeNotes(`jobs ${s}`, results[s])),
      ],
    }
  },
})
