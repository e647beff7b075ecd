import { afterAll, beforeAll, describe, expect, it } from 'vitest'
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
import { startPrivateRedis } from '../support/redis-server'
import { auth, publish } from '../support/relay-client'
import { connect } from '../support/ws-client'

/**
 * Dispatched jobs on three `apiary start` processes with the mesh on (docs/jobs.md#in-a-cluster), one private
 * Redis and one PostgreSQL. Worker agents, each its own process (test/support/job-worker-child.mjs), connect to
 * every node; requesters ask on the two nodes that stay up. While the jobs run the node that owns the
 * capability's dispatcher is killed with SIGKILL (with the workers' connections to it), and workers holding a
 * job are killed or frozen past their lease. The checker (test/support/job-checker.ts) then judges what the
 * requesters got, what the store holds and what the workers say they did.
 */
const WORKERS = 15
const JOBS = 300
const REQUESTERS = 4
const SUBMIT_EVERY_MS = 40
const KILLS = 2
const FREEZES = 2
const FREEZE_MS = 4_000
/** the owner node dies once this many requests went out */
const OWNER_KILL_AT = 100
const SETTLE_BOUND_MS = 40_000
const SEED = Number(process.env.APIARY_TEST_JOBS_SEED ?? 0x3c1f_05e7)
const CAPABILITY = 'work'

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
const cleanups: (() => Promise<void> | void)[] = []
beforeAll(async () => {
  db = await createTestDatabase()
  redis = await startPrivateRedis()
})
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
  await cluster?.close()
  await redis?.stop()
  await db?.drop()
})

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

/** whether a check's findings name the job (they begin with its id's first 12 hex digits) */
const named = (failed: Record<string, string[]>, id: string) =>
  Object.values(failed).some((f) => f.some((x) => x.startsWith(id.slice(0, 12))))
const tagOf = (e: NostrEvent, name: string) => e.tags.find((t) => t[0] === name)?.[1]

describe('dispatched jobs on three nodes while the owner node and workers die', { timeout: 180_000 }, () => {
  it("answers every accepted job once, from its current assignee only, through kill -9 of the dispatcher's node", async () => {
    const t0 = Date.now()
    cluster = await startMeshCluster(3, { redisUrl: redis.url, databaseUrl: db.url, env: ENV })
    const [owner, ...survivors] = cluster.nodes as [MeshNode, MeshNode, MeshNode]
    for (const node of cluster.nodes)
      await eventually(
        () => meshStatus(node),
        (s) => s.peers.filter((p) => p.connected).length === 2,
        'every node linked to the others',
        { timeoutMs: 20_000, intervalMs: 200 },
      )
    await claimOwner(owner)
    const random = prng(SEED)
    const fleet = new Fleet({ urls: cluster.nodes.map((n) => n.url), capability: CAPABILITY, seed: SEED, freezeMs: FREEZE_MS, random })
    cleanups.push(() => fleet.end())
    await fleet.add(WORKERS)
    const arrivals = new Map<string, NostrEvent[]>()
    const requesters = await Promise.all(Array.from({ length: REQUESTERS }, (_, i) => startRequester(survivors[i % 2]!.url, arrivals)))
    cleanups.push(() => Promise.all(requesters.map((r) => r.stop())).then(() => {}))
    const tReady = Date.now()

    const jobs: JobRecord[] = []
    const settled: Promise<void>[] = []
    let submitting = true
    let killedAtMs = 0
    let interruptedByKill = 0
    const plan = [...Array<'kill'>(KILLS).fill('kill'), ...Array<'freeze'>(FREEZES).fill('freeze')].sort(() => random() - 0.5)
    const faults = fleet.inject(plan, () => submitting || jobs.some((j) => j.outcome === undefined))
    for (let i = 0; i < JOBS; i++) {
      if (i === OWNER_KILL_AT) {
        killedAtMs = Date.now()
        interruptedByKill = fleet.interruptOn(owner.url)
        owner.process.proc.kill('SIGKILL')
      }
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
    await Promise.race([Promise.all(settled), sleep(SETTLE_BOUND_MS)])
    const tSettled = Date.now()
    await faults
    await fleet.thawed()
    fleet.settle()

    const run: JobRunRecord = {
      jobs,
      arrivals,
      stored: await readStored(
        survivors[0]!,
        jobs,
        requesters.map((r) => r.pubkey),
      ),
      workers: fleet.workers.map((w) => ({ name: w.name, pubkey: w.pubkey, lines: w.lines })),
      interrupted: fleet.interrupted,
    }
    const accepted = acceptedJobs(run)
    const failed = {
      answers: checkOneFinalAnswer(run),
      superseded: checkNoSupersededAccepted(run),
      double: checkNoDoubleWork(run),
      order: checkChunkOrder(run),
    }
    const sessions = (await Promise.all(survivors.map((n) => meshStatus(n)))).flatMap((s) => s.sessions)
    const session = sessions.find((s) => s.session === `capability:${CAPABILITY}` && s.local)
    const outcomes = new Map<string, number>()
    for (const j of jobs) {
      const k = j.outcome === undefined ? 'unsettled' : 'result' in j.outcome ? 'result' : `error:${j.outcome.error.code}`
      outcomes.set(k, (outcomes.get(k) ?? 0) + 1)
    }
    console.log(
      [
        `cluster jobs fault run (seed ${SEED.toString(16)}): ${JOBS} jobs, ${WORKERS} workers on 3 nodes, ${REQUESTERS} requesters on 2`,
        `  setup ${tReady - t0} ms, submitting ${tSubmitted - tReady} ms, settling ${tSettled - tSubmitted} ms`,
        `  owner node killed at +${killedAtMs - tReady} ms holding ${interruptedByKill} jobs on its workers; the session now: ${JSON.stringify(session)}`,
        `  outcomes ${JSON.stringify(Object.fromEntries(outcomes))}; accepted ${accepted.length}`,
        ...fleet.faults.map((f) => `  ${f.what} ${f.worker} at +${f.atMs - tReady} ms holding ${f.held.length}`),
        // what the workers did, and what its requester received, for each job that did not end in a result or
        // that a check names
        ...jobs
          .filter((j) => (j.outcome !== undefined && !('result' in j.outcome)) || named(failed, j.id))
          .map((j) => {
            const steps = fleet.workers.flatMap((w) =>
              w.lines
                .filter((l) => l.job === j.id)
                .map((l) => `${w.name}@${w.url.slice(-5)} ${l.step}/${l.generation}${l.why ? `(${l.why})` : ''} +${l.atMs - tReady}`),
            )
            const got = (arrivals.get(j.requester) ?? [])
              .filter((e) => e.tags.some((t) => t[0] === 'e' && t[1] === j.id))
              .map((e) => `${e.kind}/${tagOf(e, 'generation')}${e.kind === KIND_CHUNK ? `#${tagOf(e, 'seq')}` : ''}`)
            const at = survivors[requesters.findIndex((r) => r.pubkey === j.requester) % 2]?.url.slice(-5)
            const outcome = j.outcome === undefined ? 'unsettled' : 'result' in j.outcome ? 'result' : JSON.stringify(j.outcome)
            return `  ${j.id.slice(0, 12)} ended ${outcome}: ${steps.join(', ')}; requester@${at} got ${got.join(' ')}`
          }),
      ].join('\n'),
    )
    expect.soft(accepted.length, 'the relay accepted every request (OK true)').toBe(JOBS)
    expect.soft(failed.answers, '1. every accepted job got exactly one final answer, none hung').toEqual([])
    expect.soft(failed.superseded, '2. no result or chunk from a superseded assignment was accepted').toEqual([])
    expect.soft(failed.double, '3. no job was completed twice by workers that stayed alive').toEqual([])
    expect.soft(failed.order, '4. chunks arrived in order per generation at each requester').toEqual([])
    expect(session, 'a surviving node owns the capability').toBeDefined()
    expect(session!.generation, 'under a higher generation than the dead owner').toBeGreaterThan(1)
  })
})
