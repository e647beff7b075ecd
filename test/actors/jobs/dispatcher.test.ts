import { generateSecretKey } from 'nostr-tools/pure'
import { afterEach, describe, expect, it } from 'vitest'
import type { AgentCandidate } from '../../../src/actors/jobs/agent-choice'
import { dispatcherActor, dispatcherPath } from '../../../src/actors/jobs/dispatcher-actor'
import { type Holder, JobBoard } from '../../../src/actors/jobs/job-board'
import type { DispatcherMsg } from '../../../src/actors/jobs/messages'
import { createKernel, type Kernel, type TypedRef, tell } from '../../../src/actors/kernel'
import { createMetrics } from '../../../src/infra/metrics'
import { signAsRelay } from '../../../src/infra/relay-key'
import type { JobWrite } from '../../../src/infra/store/job-ledger'
import { openSqliteEventStore, type SqliteEventStore } from '../../../src/infra/store/sqlite/sqlite-event-store'
import { jobReportOf } from '../../../src/protocols/jobs'
import type { NostrEvent } from '../../../src/protocols/nip01/event'
import { toSigningKey } from '../../../src/protocols/nip01/sign'
import { makeKeys, type SignedEvent, signEvent, type TestKeys } from '../../support/events'
import { eventually } from '../../support/eventually'
import { waitTurns } from '../kernel/harness'
import { ManualClock } from '../kernel/manual-clock'

/**
 * One capability's dispatcher on a real kernel and an in-memory SQLite store, its community played by the test:
 * the candidates it offers, the connections it delivers to (recorded), what it announces. Timers are told by
 * hand (Tick); monotonic and wall time are the test's.
 */
const C = 'c'
const CAP = 'echo'
const communityKey = toSigningKey(generateSecretKey())
const requester = makeKeys()

let kernel: Kernel
let store: SqliteEventStore | undefined
afterEach(async () => {
  await kernel.shutdown()
  await store?.close()
  store = undefined
})

interface Agent {
  keys: TestKeys
  conn: string
}

/**
 * `holders`: who holds each job, as the agents' nodes say (DispatcherDeps.holders); else what the board holds.
 * `roleDomains`: who may be given whose job.
 */
function start(o: { holders?: Map<string, Holder>; roleDomains?: (requester: string, agent: string) => boolean } = {}) {
  kernel = createKernel({ clock: new ManualClock() })
  store = openSqliteEventStore({ file: ':memory:', groupCommitMaxEvents: 100, groupCommitMaxDelayMs: 0 })
  const s = store
  const board = new JobBoard()
  const metrics = createMetrics()
  const candidates: AgentCandidate[] = []
  const delivered: { conn: string; event: NostrEvent }[] = []
  const announced: NostrEvent[] = []
  const time = { mono: 1_000, wall: 1_700_000_000_000 }
  const spawn = () =>
    kernel.spawn(
      dispatcherPath(C, CAP),
      dispatcherActor({
        community: C,
        capability: CAP,
        store: { save: s.save.bind(s), query: s.query.bind(s), jobs: s.jobs! },
        board,
        candidates: () => [...candidates],
        ...(o.holders ? { holders: () => new Map(o.holders) } : {}),
        roleDomains: () => o.roleDomains,
        deliverTo: (conn, event) => {
          delivered.push({ conn, event })
          return true
        },
        announce: (event) => announced.push(event),
        sign: (t, at) => signAsRelay(communityKey, t, at),
        limits: {
          acceptTimeoutMs: 1_000,
          maxAttempts: 3,
          maxQueuedPerCapability: 100,
          maxCapabilitiesPerCommunity: 10,
          maxOpenPerRequester: 100,
        },
        nowMs: () => time.mono,
        wallMs: () => time.wall,
        metrics,
        log: { warn: () => {}, error: () => {}, info: () => {} },
        tickMs: 3_600_000,
      }),
    )
  let ref: TypedRef<DispatcherMsg> = spawn()
  const say = (msg: DispatcherMsg) => expect(tell(ref, msg)).toBe(true)
  const agent = (n: number): Agent => {
    const a = { keys: makeKeys(), conn: `conn-${n}` }
    candidates.push({ conn: a.conn, pubkey: a.keys.pubkey, concurrency: 1 })
    return a
  }
  /** a dispatch request stored and told, as its community does */
  const enqueue = async (deadlineMs?: number, input = 'x', from = requester): Promise<SignedEvent> => {
    const e = signEvent(from, { kind: 5050, tags: [['c', CAP], ['dispatch']], content: input })
    const write: JobWrite = {
      op: 'enqueue',
      capability: CAP,
      queuedAtMs: time.wall,
      deadlineAtMs: deadlineMs === undefined ? null : time.wall + deadlineMs,
    }
    expect((await s.save(C, e.event, e.raw, write)).status).toBe('saved')
    say({
      type: 'Enqueued',
      job: { id: e.event.id, requester: from.pubkey, kind: 5050, raw: e.raw, queuedAtMs: time.wall, deadlineAtMs: write.deadlineAtMs },
    })
    return e
  }
  /** what an assignee sends, stored through the fence; told to the dispatcher when the store took it */
  const report = async (a: Agent, job: SignedEvent, generation: number, tags: string[][], kind = 7000) => {
    const e = signEvent(a.keys, { kind, tags: [['e', job.event.id], ['p', requester.pubkey], ['generation', String(generation)], ...tags] })
    const r = jobReportOf(e.event)
    if (!r.ok || !r.value) throw new Error('not a report')
    const ends = kind !== 7000 ? 'success' : r.value.what === 'error' && !r.value.retry ? 'error' : null
    const write: JobWrite = { op: 'report', job: job.event.id, generation, ends, accepts: r.value.what === 'processing' }
    const outcome = await s.save(C, e.event, e.raw, write)
    if (outcome.status === 'saved') say({ type: 'Reported', pubkey: a.keys.pubkey, report: r.value })
    return outcome.status
  }
  const assignmentsTo = (a: Agent, status = 'assigned') =>
    delivered.filter((d) => d.conn === a.conn && d.event.tags.some((t) => t[0] === 'status' && t[1] === status)).map((d) => d.event)
  const row = (job: SignedEvent) => s.jobs!.job(C, job.event.id)
  const respawn = async () => {
    await kernel.stop(dispatcherPath(C, CAP))
    ref = spawn()
  }
  return { board, metrics, candidates, delivered, announced, time, say, agent, enqueue, report, assignmentsTo, row, respawn }
}

const generationOf = (e: NostrEvent) => Number(e.tags.find((t) => t[0] === 'generation')?.[1])
const ended = async (d: ReturnType<typeof start>, outcome: string) =>
  (await d.metrics.registry.getSingleMetric('apiary_jobs_ended_total')!.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0

describe('the job dispatcher', () => {
  it('writes generation 1 to the store before the assignment goes out, to the one candidate with room', async () => {
    const d = start()
    const a = d.agent(1)
    const job = await d.enqueue()
    await waitTurns(() => d.assignmentsTo(a).length === 1, 'the assignment')
    expect(await d.row(job)).toMatchObject({ state: 'assigned', generation: 1, assignee: a.keys.pubkey, attempts: 1 })
    expect(generationOf(d.assignmentsTo(a)[0]!)).toBe(1)
    expect(d.board.holderOf(job.event.id)).toMatchObject({ conn: a.conn, generation: 1 })
  })

  it('ignores a retry from an assignee it is already replacing: one new assignment, none to a third agent', async () => {
    const d = start()
    const a = d.agent(1)
    const job = await d.enqueue()
    await waitTurns(() => d.assignmentsTo(a).length === 1, 'the first assignment')
    const b = d.agent(2)
    const c = d.agent(3)
    // A does not accept in time: the tick hands the job on; A's retry, stored before that write, is heard right after
    d.time.mono += 1_001
    d.say({ type: 'Tick' })
    d.say({ type: 'Reported', pubkey: a.keys.pubkey, report: { job: job.event.id, generation: 1, what: 'error', retry: true } })
    await waitTurns(() => d.assignmentsTo(b).length + d.assignmentsTo(c).length >= 1, 'the second assignment')
    await waitTurns(() => false, 'nothing more', 200).catch(() => {})
    const second = [...d.assignmentsTo(b), ...d.assignmentsTo(c)]
    expect(second.map(generationOf)).toEqual([2])
    expect(d.assignmentsTo(a, 'revoked').map(generationOf)).toEqual([1])
    expect((await d.row(job))?.generation).toBe(2)
  })

  it("announces the relay's deadline error once stored, though a retry came in while it was being stored", async () => {
    const d = start()
    const a = d.agent(1)
    const job = await d.enqueue(5_000)
    await waitTurns(() => d.assignmentsTo(a).length === 1, 'the assignment')
    expect(await d.report(a, job, 1, [['status', 'processing']])).toBe('saved')
    d.time.wall += 5_001
    d.say({ type: 'Tick' })
    d.say({ type: 'Reported', pubkey: a.keys.pubkey, report: { job: job.event.id, generation: 1, what: 'error', retry: true } })
    await waitTurns(() => d.announced.length === 1, 'the terminal error')
    expect(d.announced[0]!.tags).toContainEqual(['code', 'deadline'])
    expect(await ended(d, 'deadline')).toBe(1)
    expect((await d.row(job))?.state).toBe('error')
    expect(d.board.openCount(CAP)).toBe(0)
  })

  it('hears a result stored while it restarts, after reading its open jobs back, and hands the job to nobody else', async () => {
    const d = start()
    const a = d.agent(1)
    const job = await d.enqueue()
    await waitTurns(() => d.assignmentsTo(a).length === 1, 'the assignment')
    await d.respawn()
    // the result commits, and its Reported reaches the new activation before its open jobs are read back
    expect(await d.report(a, job, 1, [], 6050)).toBe('saved')
    await eventually(
      () => ended(d, 'success'),
      (n) => n === 1,
      'the job ended in success',
    )
    expect(d.board.openCount(CAP)).toBe(0)
    expect(d.delivered.filter((x) => x.event.tags.some((t) => t[0] === 'status' && t[1] === 'assigned'))).toHaveLength(1)
  })

  it('keeps a job read back with the connection that holds it at its generation, and no other', async () => {
    const holders = new Map<string, Holder>()
    const d = start({ holders })
    const a = d.agent(1)
    const kept = await d.enqueue()
    await waitTurns(() => d.assignmentsTo(a).length === 1, 'the first assignment')
    expect(await d.report(a, kept, 1, [['status', 'processing']])).toBe('saved')
    d.candidates.push({ conn: 'conn-1b', pubkey: a.keys.pubkey, concurrency: 1 })
    const lost = await d.enqueue(undefined, 'y')
    await waitTurns(() => d.delivered.some((x) => x.conn === 'conn-1b'), 'the second assignment, to its second connection')
    expect(await d.report(a, lost, 1, [['status', 'processing']])).toBe('saved')
    // a's first connection still holds its job; its second closed and a connected again as conn-1c (the client
    // dropped the job with that connection), so the node reports no holder for the second job
    holders.set(kept.event.id, { conn: a.conn, pubkey: a.keys.pubkey, generation: 1 })
    d.candidates.splice(1, 1, { conn: 'conn-1c', pubkey: a.keys.pubkey, concurrency: 1 })
    const before = d.delivered.length
    await d.respawn()
    // (to a, on its new connection: under a third generation, as the second goes to the queue with a excluded)
    await waitTurns(() => d.delivered.some((x) => x.conn === 'conn-1c'), 'the second job assigned again')
    const again = generationOf(d.delivered.find((x) => x.conn === 'conn-1c')!.event)
    expect(again).toBeGreaterThan(1)
    expect(await d.row(lost)).toMatchObject({ state: 'assigned', generation: again, assignee: a.keys.pubkey })
    expect(await d.row(kept)).toMatchObject({ state: 'running', generation: 1 })
    expect(d.board.holderOf(kept.event.id)).toMatchObject({ conn: a.conn, generation: 1 })
    // the first job went to no one else: its holder is as it was
    expect(d.delivered.slice(before).filter((x) => x.event.tags.some((t) => t[0] === 'e' && t[1] === kept.event.id))).toEqual([])
  })

  it('hands on a job whose connection went away while its open jobs were read back', async () => {
    const holders = new Map<string, Holder>()
    const d = start({ holders })
    const [a, b] = [d.agent(1), d.agent(2)]
    const job = await d.enqueue()
    await waitTurns(() => d.delivered.length === 1, 'the assignment')
    const holder = d.delivered[0]!.conn === a.conn ? a : b
    expect(await d.report(holder, job, 1, [['status', 'processing']])).toBe('saved')
    holders.set(job.event.id, { conn: holder.conn, pubkey: holder.keys.pubkey, generation: 1 })
    await d.respawn()
    // told before the read of its open jobs came back, which still shows the connection holding the job
    d.say({ type: 'AgentGone', conn: holder.conn, why: 'lapsed' })
    const other = holder === a ? b : a
    await waitTurns(() => d.assignmentsTo(other).length === 1, 'the job assigned to the other agent')
    expect(generationOf(d.assignmentsTo(other)[0]!)).toBe(2)
  })

  it('gives a job only to an agent its requester may address, and meanwhile the jobs behind it go first', async () => {
    const planner = makeKeys()
    let auditor = ''
    // the planner's jobs may not go to the auditor; anyone else's may
    const d = start({ roleDomains: (from, to) => !(from === planner.pubkey && to === auditor) })
    const a = d.agent(1)
    auditor = a.keys.pubkey
    const held = await d.enqueue(undefined, 'planned', planner)
    const other = await d.enqueue(undefined, 'anyone')
    await waitTurns(() => d.assignmentsTo(a).length === 1, "the job behind the planner's")
    expect(d.assignmentsTo(a)[0]!.tags).toContainEqual(['e', other.event.id])
    expect(await d.row(held)).toMatchObject({ state: 'queued', assignee: null })
    const b = d.agent(2)
    d.say({ type: 'AgentReady' })
    await waitTurns(() => d.assignmentsTo(b).length === 1, "the planner's job, to the agent it may address")
    expect(d.assignmentsTo(b)[0]!.tags).toContainEqual(['e', held.event.id])
  })

  it('ends a job assigned maxAttempts times with the relay error "exhausted", stored and announced', async () => {
    const d = start()
    const agents = [d.agent(1), d.agent(2), d.agent(3)]
    const job = await d.enqueue()
    for (let attempt = 1; attempt <= 3; attempt++) {
      await waitTurns(() => agents.some((a) => d.assignmentsTo(a).some((e) => generationOf(e) === attempt)), `assignment ${attempt}`)
      const holder = agents.find((a) => d.assignmentsTo(a).some((e) => generationOf(e) === attempt))!
      expect(await d.report(holder, job, attempt, [['status', 'error', 'busy'], ['retry']])).toBe('saved')
    }
    await waitTurns(() => d.announced.length === 1, 'the terminal error')
    expect(d.announced[0]!.tags).toContainEqual(['code', 'exhausted'])
    expect(await d.row(job)).toMatchObject({ state: 'error', generation: 3 })
  })
})
