import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { AgentClient } from '../../src/client/index'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { makeKeys, signEvent } from '../support/events'
import { eventually } from '../support/eventually'
import {
  acceptedJobs,
  checkChunkOrder,
  checkNoDoubleWork,
  checkNoSupersededAccepted,
  checkOneFinalAnswer,
  type JobRecord,
  type JobRunRecord,
  KIND_CHUNK,
} from '../support/job-checker'
import { Fleet, prng, sleep } from '../support/job-fleet'
import { readStored, startRequester, track } from '../support/job-run'
import { type MeshCluster, type MeshNode, meshStatus, startMeshCluster } from '../support/mesh-cluster'
import { createTestDatabase, type TestDatabase } from '../support/postgres'
import { freePort, startPrivateRedis } from '../support/redis-server'
import { auth, publish } from '../support/relay-client'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy'
import { connect } from '../support/ws-client'

/**
 * Dispatched jobs on three `apiary start` processes with the mesh on (docs/jobs.md#in-a-cluster), one private
 * Redis and one PostgreSQL. Worker agents, each its own process (test/support/job-worker-child.mjs), connect to
 * every node; requesters ask on the nodes that stay up. The first run kills the node that owns the capability's
 * dispatcher with SIGKILL (with the workers' connections to it), and kills or freezes workers holding a job past
 * their lease; the second restarts Redis and cuts every mesh tunnel. The checker (test/support/job-checker.ts)
 * then judges what the requesters got, what the store holds and what the workers say they did.
 */
/** APIARY_TEST_JOBS_FULL=1: the full scale (30 workers, 1,000 jobs a run), too long for every CI run */
const FULL = process.env.APIARY_TEST_JOBS_FULL === '1'
const WORKERS = FULL ? 30 : 15
const SUBMIT_EVERY_MS = 40
const FREEZE_MS = 4_000
const SETTLE_BOUND_MS = 40_000
const SEED = Number(process.env.APIARY_TEST_JOBS_SEED ?? 0x3c1f_05e7)
const CAPABILITY = 'work'
/** past a fault that may cost chunks, how long a job under way may still have lost some (a subscription sent again) */
const GAP_GRACE_MS = 5_000

const ENV: Record<string, string> = {
  APIARY_MESH_LEASE_TTL_MS: '2000',
  APIARY_MESH_LEASE_RENEW_MS: '500',
  APIARY_PRESENCE_HEARTBEAT_SECONDS: '1',
  APIARY_AGENT_ORPHAN_SCAN_SECONDS: '0.2',
  // the processing report of an agent on another node takes a forwarder's hop: a loaded machine must not turn
  // an accept deadline into a reassignment of a live agent's job
  APIARY_JOBS_ACCEPT_TIMEOUT_MS: '3000',
  APIARY_JOBS_MAX_ATTEMPTS: '10',
  APIARY_LIMITS_MAX_LIMIT: '5000',
}
let db: TestDatabase
let redis: Awaited<ReturnType<typeof startPrivateRedis>>
let cluster: MeshCluster | undefined
const proxies: TcpProxy[] = []
const cleanups: (() => Promise<void> | void)[] = []
beforeAll(async () => {
  db = await createTestDatabase()
  redis = await startPrivateRedis()
})
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
  await cluster?.close()
  cluster = undefined
  for (const p of proxies.splice(0)) await p.close()
})
afterAll(async () => {
  await redis?.stop()
  await db?.drop()
})

async function linked(nodes: MeshNode[]): Promise<void> {
  for (const node of nodes)
    await eventually(
      () => meshStatus(node),
      (s) => s.peers.filter((p) => p.connected).length === nodes.length - 1,
      'every node linked to the others',
      { timeoutMs: 20_000, intervalMs: 200 },
    )
}

/** The dispatcher's node: a request from a throwaway client there makes it take the capability's session first. */
async function claimOwner(node: MeshNode): Promise<void> {
  const c = await connect(node.url)
  const keys = makeKeys()
  expect((await auth(c, keys, node.url)).accepted).toBe(true)
  const warm = signEvent(keys, { kind: 5050, tags: [['c', CAPABILITY], ['dispatch'], ['i', 'warm-up', 'text']], content: '' })
  expect((await publish(c, warm)).accepted).toBe(true)
  c.close()
  await eventually(
    () => meshStatus(node),
    (s) => s.sessions.some((x) => x.session === `capability:${CAPABILITY}` && x.local),
    'the first node owns the capability',
    { timeoutMs: 10_000, intervalMs: 100 },
  )
}

interface Requesters {
  clients: AgentClient[]
  /** the relay each requester asks on, by pubkey */
  urlOf: Map<string, string>
  arrivals: Map<string, NostrEvent[]>
}

async function startRequesters(urls: string[], count: number): Promise<Requesters> {
  const arrivals = new Map<string, NostrEvent[]>()
  const clients = await Promise.all(Array.from({ length: count }, (_, i) => startRequester(urls[i % urls.length]!, arrivals)))
  cleanups.push(() => Promise.all(clients.map((r) => r.stop())).then(() => {}))
  const urlOf = new Map(clients.map((c, i) => [c.pubkey, urls[i % urls.length]!]))
  return { clients, urlOf, arrivals }
}

interface Submitted {
  jobs: JobRecord[]
  /** by job id: when it was asked for and when its call settled (Date.now()) */
  spans: Map<string, { fromMs: number; toMs?: number }>
  tSubmitted: number
  tSettled: number
}

/** `count` requests, one every SUBMIT_EVERY_MS over the requesters in turn, `before(i)` ahead of request i; then the settling. */
async function submit(r: Requesters, count: number, before: (i: number) => void): Promise<Submitted> {
  const jobs: JobRecord[] = []
  const spans = new Map<string, { fromMs: number; toMs?: number }>()
  const settled: Promise<void>[] = []
  for (let i = 0; i < count; i++) {
    before(i)
    const requester = r.clients[i % r.clients.length]!
    const input = `job-${i}`
    const call = requester.request(CAPABILITY, input)
    const job: JobRecord = { id: call.id, input, requester: requester.pubkey, chunks: [] }
    const span: { fromMs: number; toMs?: number } = { fromMs: Date.now() }
    jobs.push(job)
    spans.set(job.id, span)
    settled.push(
      track(call, job).then(() => {
        span.toMs = Date.now()
      }),
    )
    await sleep(SUBMIT_EVERY_MS)
  }
  const tSubmitted = Date.now()
  await Promise.race([Promise.all(settled), sleep(SETTLE_BOUND_MS)])
  return { jobs, spans, tSubmitted, tSettled: Date.now() }
}

/** What the checker judges: the calls, what the requesters received, what `node` reads of the store, the workers' lines. */
async function recordOf(s: Submitted, r: Requesters, fleet: Fleet, node: MeshNode, gapsAllowed?: Set<string>): Promise<JobRunRecord> {
  return {
    jobs: s.jobs,
    arrivals: r.arrivals,
    stored: await readStored(
      node,
      s.jobs,
      r.clients.map((c) => c.pubkey),
    ),
    workers: fleet.workers.map((w) => ({ name: w.name, pubkey: w.pubkey, lines: w.lines })),
    interrupted: fleet.interrupted,
    ...(gapsAllowed ? { gapsAllowed } : {}),
  }
}

type Findings = Record<'answers' | 'superseded' | 'double' | 'order', string[]>

const findingsOf = (run: JobRunRecord): Findings => ({
  answers: checkOneFinalAnswer(run),
  superseded: checkNoSupersededAccepted(run),
  double: checkNoDoubleWork(run),
  order: checkChunkOrder(run),
})

/** whether a check's findings name the job (they begin with its id's first 12 hex digits) */
const named = (failed: Findings, id: string) => Object.values(failed).some((f) => f.some((x) => x.startsWith(id.slice(0, 12))))
const tagOf = (e: NostrEvent, name: string) => e.tags.find((t) => t[0] === name)?.[1]

/** jobs answered with a result whose generation's chunks did not all reach the call */
const gapped = (run: JobRunRecord) =>
  run.jobs.filter((j) => {
    if (j.outcome === undefined || !('result' in j.outcome)) return false
    const g = Number(tagOf(j.outcome.result, 'generation'))
    return j.chunks.filter((c) => c.generation === g).length !== 3
  }).length

/**
 * The run's outcomes, then what the workers did, and what its requester received, for each job that did not end
 * in a result or that a check names.
 */
function traceOf(run: JobRunRecord, failed: Findings, fleet: Fleet, r: Requesters, tReady: number): string[] {
  const outcomes = new Map<string, number>()
  for (const j of run.jobs) {
    const k = j.outcome === undefined ? 'unsettled' : 'result' in j.outcome ? 'result' : `error:${j.outcome.error.code}`
    outcomes.set(k, (outcomes.get(k) ?? 0) + 1)
  }
  return [
    `  outcomes ${JSON.stringify(Object.fromEntries(outcomes))}; accepted ${acceptedJobs(run).length}`,
    ...(run.gapsAllowed ? [`  under way during a fault ${run.gapsAllowed.size}, of which ${gapped(run)} missed chunks`] : []),
    ...fleet.faults.map((f) => `  ${f.what} ${f.worker} at +${f.atMs - tReady} ms holding ${f.held.length}`),
    ...run.jobs
      .filter((j) => (j.outcome !== undefined && !('result' in j.outcome)) || named(failed, j.id))
      .map((j) => {
        const steps = fleet.workers.flatMap((w) =>
          w.lines
            .filter((l) => l.job === j.id)
            .map((l) => `${w.name}@${w.url.slice(-5)} ${l.step}/${l.generation}${l.why ? `(${l.why})` : ''} +${l.atMs - tReady}`),
        )
        const got = (r.arrivals.get(j.requester) ?? [])
          .filter((e) => e.tags.some((t) => t[0] === 'e' && t[1] === j.id))
          .map((e) => `${e.kind}/${tagOf(e, 'generation')}${e.kind === KIND_CHUNK ? `#${tagOf(e, 'seq')}` : ''}`)
        const outcome = j.outcome === undefined ? 'unsettled' : 'result' in j.outcome ? 'result' : JSON.stringify(j.outcome)
        return `  ${j.id.slice(0, 12)} ended ${outcome}: ${steps.join(', ')}; requester@${r.urlOf.get(j.requester)?.slice(-5)} got ${got.join(' ')}`
      }),
  ]
}

/** soft: a failing run reports every claim that failed, not only the first */
function expectClaims(run: JobRunRecord, failed: Findings, asked: number): void {
  expect.soft(acceptedJobs(run).length, 'the relay accepted every request (OK true)').toBe(asked)
  expect.soft(failed.answers, '1. every accepted job got exactly one final answer, none hung').toEqual([])
  expect.soft(failed.superseded, '2. no result or chunk from a superseded assignment was accepted').toEqual([])
  expect.soft(failed.double, '3. no job was completed twice by workers that stayed alive').toEqual([])
  expect.soft(failed.order, '4. chunks arrived in order per generation at each requester').toEqual([])
}

describe('dispatched jobs on three nodes under faults', { timeout: FULL ? 400_000 : 180_000 }, () => {
  it("answers every accepted job once, from its current assignee only, through kill -9 of the dispatcher's node", async () => {
    const JOBS = FULL ? 1_000 : 300
    /** the owner node dies once this many requests went out */
    const OWNER_KILL_AT = FULL ? 300 : 100
    const t0 = Date.now()
    cluster = await startMeshCluster(3, { redisUrl: redis.url, databaseUrl: db.url, env: ENV })
    const [owner, ...survivors] = cluster.nodes as [MeshNode, MeshNode, MeshNode]
    await linked(cluster.nodes)
    await claimOwner(owner)
    const random = prng(SEED)
    const fleet = new Fleet({ urls: cluster.nodes.map((n) => n.url), capability: CAPABILITY, seed: SEED, freezeMs: FREEZE_MS, random })
    cleanups.push(() => fleet.end())
    await fleet.add(WORKERS)
    const r = await startRequesters(
      survivors.map((n) => n.url),
      4,
    )
    const tReady = Date.now()

    let running = true
    let killedAtMs = 0
    let interruptedByKill = 0
    const plan = [...Array<'kill'>(2).fill('kill'), ...Array<'freeze'>(2).fill('freeze')].sort(() => random() - 0.5)
    const faults = fleet.inject(plan, () => running)
    const s = await submit(r, JOBS, (i) => {
      if (i !== OWNER_KILL_AT) return
      killedAtMs = Date.now()
      interruptedByKill = fleet.interruptOn(owner.url)
      owner.process.proc.kill('SIGKILL')
    })
    running = false
    await faults
    await fleet.thawed()
    fleet.settle()

    const run = await recordOf(s, r, fleet, survivors[0]!)
    const failed = findingsOf(run)
    const sessions = (await Promise.all(survivors.map((n) => meshStatus(n)))).flatMap((x) => x.sessions)
    const session = sessions.find((x) => x.session === `capability:${CAPABILITY}` && x.local)
    console.log(
      [
        `cluster jobs fault run (seed ${SEED.toString(16)}): ${JOBS} jobs, ${WORKERS} workers on 3 nodes, 4 requesters on 2`,
        `  setup ${tReady - t0} ms, submitting ${s.tSubmitted - tReady} ms, settling ${s.tSettled - s.tSubmitted} ms`,
        `  owner node killed at +${killedAtMs - tReady} ms holding ${interruptedByKill} jobs on its workers; the session now: ${JSON.stringify(session)}`,
        ...traceOf(run, failed, fleet, r, tReady),
      ].join('\n'),
    )
    expectClaims(run, failed, JOBS)
    expect(session, 'a surviving node owns the capability').toBeDefined()
    expect(session!.generation, 'under a higher generation than the dead owner').toBeGreaterThan(1)
  })

  it('answers every accepted job once, none lost, through a Redis restart and every mesh tunnel cut', async () => {
    const JOBS = FULL ? 1_000 : 400
    const CUT_AT = FULL ? 200 : 60
    const CUT_MS = 1_000
    const REDIS_AT = FULL ? 600 : 160
    const REDIS_DOWN_MS = 1_000
    const t0 = Date.now()
    // every node advertises a proxy in front of its mesh port: cutting the three cuts every tunnel
    cluster = await startMeshCluster(0, { redisUrl: redis.url, databaseUrl: db.url, env: ENV })
    for (let i = 0; i < 3; i++) {
      const meshPort = await freePort()
      const proxy = await startTcpProxy(meshPort)
      proxies.push(proxy)
      await cluster.start({ APIARY_MESH_PORT: String(meshPort), APIARY_MESH_ADVERTISED_ADDRESS: `127.0.0.1:${proxy.port}` })
    }
    const nodes = cluster.nodes
    await linked(nodes)
    await claimOwner(nodes[0]!)
    const fleet = new Fleet({ urls: nodes.map((n) => n.url), capability: CAPABILITY, seed: SEED, freezeMs: FREEZE_MS, random: prng(SEED) })
    cleanups.push(() => fleet.end())
    await fleet.add(WORKERS)
    const r = await startRequesters(
      nodes.map((n) => n.url),
      6,
    )
    const tReady = Date.now()

    // the faults run beside the requests: [from, to] of each, for the jobs under way then
    const windows: { what: string; fromMs: number; toMs: number }[] = []
    const faults: Promise<void>[] = []
    const s = await submit(r, JOBS, (i) => {
      if (i === CUT_AT) {
        faults.push(
          (async () => {
            const fromMs = Date.now()
            for (const p of proxies) p.cut()
            await sleep(CUT_MS)
            for (const p of proxies) p.restore()
            windows.push({ what: 'tunnels cut', fromMs, toMs: Date.now() })
          })(),
        )
      }
      if (i === REDIS_AT) {
        faults.push(
          (async () => {
            const fromMs = Date.now()
            await redis.kill()
            await sleep(REDIS_DOWN_MS)
            await redis.restart()
            windows.push({ what: 'redis restarted', fromMs, toMs: Date.now() })
          })(),
        )
      }
    })
    await Promise.all(faults)
    const gapsAllowed = new Set(
      s.jobs
        .filter((j) => {
          const span = s.spans.get(j.id)!
          return windows.some((w) => span.fromMs <= w.toMs + GAP_GRACE_MS && (span.toMs ?? Number.POSITIVE_INFINITY) >= w.fromMs)
        })
        .map((j) => j.id),
    )
    const run = await recordOf(s, r, fleet, nodes[1]!, gapsAllowed)
    const failed = findingsOf(run)
    console.log(
      [
        `cluster jobs fault run (seed ${SEED.toString(16)}): ${JOBS} jobs, ${WORKERS} workers and 6 requesters on 3 nodes`,
        `  setup ${tReady - t0} ms, submitting ${s.tSubmitted - tReady} ms, settling ${s.tSettled - s.tSubmitted} ms`,
        ...windows.map((w) => `  ${w.what} at +${w.fromMs - tReady} ms for ${w.toMs - w.fromMs} ms`),
        ...traceOf(run, failed, fleet, r, tReady),
      ].join('\n'),
    )
    expectClaims(run, failed, JOBS)
    expect(windows.map((w) => w.what).sort()).toEqual(['redis restarted', 'tunnels cut'])
  })
})
