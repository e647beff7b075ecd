import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { eventually } from '../support/eventually'
import {
  acceptedJobs,
  checkChunkOrder,
  checkNoDoubleWork,
  checkNoSupersededAccepted,
  checkOneFinalAnswer,
  type JobRecord,
  type JobRunRecord,
} from '../support/job-checker'
import { Fleet, prng, sleep } from '../support/job-fleet'
import { readStored, startRequester, track } from '../support/job-run'
import { metric } from '../support/metrics'
import { GENEROUS_ENV, startRelayProcess } from '../support/relay-process'

/**
 * Dispatched jobs (docs/jobs.md) while their workers die: one `apiary start` process, WORKERS worker agents
 * each in its own process (test/support/job-worker-child.mjs), and REQUESTERS AgentClients here asking for JOBS
 * jobs at a steady pace. While the jobs run, workers that hold a job are killed with SIGKILL (and replaced) or
 * frozen with SIGSTOP past their lease, then resumed. The checker (test/support/job-checker.ts) then judges
 * what the requesters got, what the relay stored, and what the workers say they did.
 */
const WORKERS = 12
const JOBS = 300
const REQUESTERS = 4
/** one request leaves every SUBMIT_EVERY_MS: the run lasts long enough for every fault to find a job */
const SUBMIT_EVERY_MS = 40
const KILLS = 4
const FREEZES = 4
/** past the relay's lease of 3 s (three 1 s heartbeats), so the frozen worker lapses and its job moves */
const FREEZE_MS = 4_000
/** how long after the last request every call must have settled */
const SETTLE_BOUND_MS = 30_000
/** another seed, to explore: APIARY_TEST_JOBS_SEED=<integer> */
const SEED = Number(process.env.APIARY_TEST_JOBS_SEED ?? 0x10b5_f417)
const CAPABILITY = 'work'

const RELAY_ENV: Record<string, string> = {
  ...GENEROUS_ENV,
  APIARY_PRESENCE_HEARTBEAT_SECONDS: '1',
  APIARY_AGENT_ORPHAN_SCAN_SECONDS: '0.2',
  APIARY_JOBS_ACCEPT_TIMEOUT_MS: '1000',
  APIARY_JOBS_MAX_ATTEMPTS: '10',
  APIARY_LIMITS_MAX_LIMIT: '5000',
}
describe('dispatched jobs while their workers are killed and frozen', { timeout: 120_000 }, () => {
  const cleanups: (() => Promise<void> | void)[] = []
  afterAll(async () => {
    for (const c of cleanups.splice(0).reverse()) await c()
  })

  it('answers every accepted job once, from its current assignee only, with chunks in order and metrics that agree', async () => {
    const t0 = Date.now()
    const dir = mkdtempSync(join(tmpdir(), 'apiary-faults-jobs-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const relay = await startRelayProcess(['--port', '0', '--data-dir', dir], RELAY_ENV)
    cleanups.push(async () => {
      relay.proc.kill('SIGTERM')
      await relay.exited
    })
    const port = { port: Number(new URL(relay.url).port) }
    const random = prng(SEED)
    const fleet = new Fleet({ urls: [relay.url], capability: CAPABILITY, seed: SEED, freezeMs: FREEZE_MS, random })
    cleanups.push(() => fleet.end())
    await fleet.add(WORKERS)
    const arrivals = new Map<string, NostrEvent[]>()
    const requesters = await Promise.all(Array.from({ length: REQUESTERS }, () => startRequester(relay.url, arrivals)))
    cleanups.push(() => Promise.all(requesters.map((r) => r.stop())).then(() => {}))
    const tReady = Date.now()

    // the requests at a steady pace; the faults meanwhile, each on a worker that holds a job
    const jobs: JobRecord[] = []
    const settled: Promise<void>[] = []
    let submitting = true
    const plan = [...Array<'kill'>(KILLS).fill('kill'), ...Array<'freeze'>(FREEZES).fill('freeze')].sort(() => random() - 0.5)
    const faults = fleet.inject(plan, () => submitting || jobs.some((j) => j.outcome === undefined))
    for (let i = 0; i < JOBS; i++) {
      const requester = requesters[i % REQUESTERS]!
      const input = `job-${i}`
      const call = requester.request(CAPABILITY, input)
      const job: JobRecord = { id: call.id, input, requester: requester.pubkey, chunks: [] }
      jobs.push(job)
      settled.push(track(call, job))
      await sleep(SUBMIT_EVERY_MS)
    }
    submitting = false
    const tSubmitted = Date.now()
    const all = Promise.all(settled)
    await Promise.race([all, sleep(SETTLE_BOUND_MS)])
    const tSettled = Date.now()
    await faults
    await fleet.thawed()

    const run: JobRunRecord = {
      jobs,
      arrivals,
      stored: await readStored(
        relay,
        jobs,
        requesters.map((r) => r.pubkey),
      ),
      workers: fleet.workers.map((w) => ({ name: w.name, pubkey: w.pubkey, lines: w.lines })),
      interrupted: fleet.interrupted,
    }
    const accepted = acceptedJobs(run)
    const ended = await eventually(
      () => metric(port, 'apiary_jobs_ended_total'),
      (n) => n >= accepted.length,
      'every accepted job counted as ended',
      { timeoutMs: 3_000 },
    ).catch(() => metric(port, 'apiary_jobs_ended_total'))
    const fenced = await metric(port, 'apiary_job_reports_fenced_total')
    const refusals = refusalsOf(run, fleet)
    summarize({ run, fleet, accepted: accepted.length, ended, fenced, refusals, times: { t0, tReady, tSubmitted, tSettled } })
    // soft: a failing run reports every claim that failed, not only the first
    expect.soft(accepted.length, 'the relay accepted every request (OK true)').toBe(JOBS)
    expect.soft(checkOneFinalAnswer(run), '1. every accepted job got exactly one final answer, none hung').toEqual([])
    expect.soft(checkNoSupersededAccepted(run), '2. no result or chunk from a superseded assignment was accepted').toEqual([])
    expect.soft(checkNoDoubleWork(run), '3. no job was completed twice by workers that stayed alive').toEqual([])
    expect.soft(checkChunkOrder(run), '4. chunks arrived in order per generation at each requester').toEqual([])
    expect.soft(ended, '5. apiary_jobs_ended_total sums to the accepted jobs').toBe(accepted.length)
    expect
      .soft(fenced, '5. apiary_job_reports_fenced_total counts every "restricted:" a worker was answered')
      .toBeGreaterThanOrEqual(refusals.restricted.length)
    if (refusals.afterResume.length > 0)
      expect.soft(fenced, '5. a frozen worker resumed and was fenced: the relay counted it').toBeGreaterThan(0)
    expect(fleet.faults.filter((f) => f.what === 'kill').length, 'kills injected on workers holding a job').toBe(KILLS)
    expect(fleet.faults.filter((f) => f.what === 'freeze').length, 'freezes injected on workers holding a job').toBe(FREEZES)
  })
})

/** what the workers were answered OK false about jobs: all of it, the `restricted:` ones, and a frozen worker's after its freeze */
function refusalsOf(run: JobRunRecord, fleet: Fleet) {
  const all = run.workers.flatMap((w) => w.lines.filter((l) => l.step === 'refused').map((l) => ({ worker: w.name, ...l })))
  const freezes = fleet.faults.filter((f) => f.what === 'freeze')
  return {
    all,
    restricted: all.filter((r) => r.why?.endsWith(':restricted')),
    afterResume: all.filter((r) => freezes.some((f) => f.worker === r.worker && r.atMs >= f.atMs + FREEZE_MS)),
  }
}

/** what became of a job a fault interrupted: finished by the worker anyway (the fault came too late), or answered under which generation */
function heldFate(run: JobRunRecord, worker: string, held: string): string {
  const [job, generation] = held.split('/')
  const w = run.workers.find((x) => x.name === worker)
  const here = w?.lines.find((l) => l.job === job && l.generation === Number(generation) && l.step !== 'started')
  const stored = run.stored.results.find((e) => e.tags.some((x) => x[0] === 'e' && x[1] === job))
  const answered = stored?.tags.find((x) => x[0] === 'generation')?.[1]
  return `${job!.slice(0, 12)}/${generation}: ${here?.step ?? 'no word'} by ${worker}, result stored under generation ${answered ?? 'none'}`
}

function summarize(o: {
  run: JobRunRecord
  fleet: Fleet
  accepted: number
  ended: number
  fenced: number
  refusals: ReturnType<typeof refusalsOf>
  times: Record<string, number>
}): void {
  const { run, fleet } = o
  const outcomes = new Map<string, number>()
  for (const j of run.jobs) {
    const k = j.outcome === undefined ? 'unsettled' : 'result' in j.outcome ? 'result' : `error:${j.outcome.error.code}`
    outcomes.set(k, (outcomes.get(k) ?? 0) + 1)
  }
  const lines = run.workers.flatMap((w) => w.lines)
  const t = o.times
  console.log(
    [
      `jobs fault run (seed ${SEED.toString(16)}): ${JOBS} jobs, ${WORKERS} workers (${run.workers.length} started), ${REQUESTERS} requesters`,
      `  setup ${t.tReady! - t.t0!} ms, submitting ${t.tSubmitted! - t.tReady!} ms, settling ${t.tSettled! - t.tSubmitted!} ms`,
      `  outcomes ${JSON.stringify(Object.fromEntries(outcomes))}; accepted ${o.accepted}; apiary_jobs_ended_total ${o.ended}`,
      `  worker lines: started ${lines.filter((l) => l.step === 'started').length}, completed ${lines.filter((l) => l.step === 'completed').length}, aborted ${lines.filter((l) => l.step === 'aborted').length} (${[...new Set(lines.filter((l) => l.step === 'aborted').map((l) => l.why))].join(', ')})`,
      `  completed by a worker after it was killed or frozen holding the job: ${run.workers.flatMap((w) => w.lines.filter((l) => l.step === 'completed' && run.interrupted.has(`${w.name}/${l.job}/${l.generation}`))).length}`,
      `  stored: ${run.stored.results.length} results, ${run.stored.feedback.length} feedback; generations of results > 1: ${run.stored.results.filter((e) => e.tags.some((x) => x[0] === 'generation' && x[1] !== '1')).length}`,
      `  apiary_job_reports_fenced_total ${o.fenced}; OK false to workers: ${o.refusals.all.length} (${o.refusals.restricted.length} restricted, ${o.refusals.afterResume.length} by a frozen worker after its freeze)`,
      ...o.refusals.all.map(
        (r) =>
          `    ${r.worker} ${r.job.slice(0, 12)}/${r.generation} kind:prefix ${r.why}${o.fleet.faults.some((f) => f.worker === r.worker) ? ' (a faulted worker)' : ''}`,
      ),
      ...fleet.faults.map(
        (f) => `  ${f.what} ${f.worker} at +${f.atMs - t.tReady!} ms holding ${f.held.map((h) => heldFate(run, f.worker, h)).join('; ')}`,
      ),
    ].join('\n'),
  )
}
