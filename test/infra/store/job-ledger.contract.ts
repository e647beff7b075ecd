import { randomUUID } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { EventStore, SaveOutcome } from '../../../src/infra/store/event-store'
import type { JobLedger, JobRow, JobWrite } from '../../../src/infra/store/job-ledger'
import { makeKeys, type SignedEvent, signEvent, type TestKeys } from '../../support/events'
import { at, idsOf, NOW } from './contract-context'

/**
 * The jobs table's contract (job-ledger.ts): every backend runs these same tests. Each test owns a fresh community
 * id, so backends sharing one database across tests never see each other's rows.
 */

export interface JobLedgerContractOptions {
  /** closes `store` and opens the same database again; without it the restart test is skipped */
  reopen?: (store: EventStore) => Promise<EventStore>
}

export const requester = makeKeys()
const agent = makeKeys()
const rival = makeKeys()
/** the community's key, which signs the relay's terminal error */
const relay = makeKeys()

const CAPABILITY = 'summarize'
const QUEUED_AT_MS = 1_700_000_000_000

export const request = (t: { capability?: string; content?: string } = {}) =>
  signEvent(requester, {
    kind: 5100,
    created_at: at(60),
    tags: [['c', t.capability ?? CAPABILITY], ['dispatch']],
    content: t.content ?? '',
  })

export const enqueue = (queuedAtMs = QUEUED_AT_MS, deadlineAtMs: number | null = null, capability = CAPABILITY): JobWrite => ({
  op: 'enqueue',
  capability,
  queuedAtMs,
  deadlineAtMs,
})

/** Feedback or a result from `keys` about `job` at `generation` (none: a plain NIP-90 provider), and its JobWrite. */
export function report(
  keys: TestKeys,
  job: SignedEvent,
  generation: number | null,
  what: 'processing' | 'partial' | 'result' | 'error',
): { e: SignedEvent; write: JobWrite } {
  const tags = [['e', job.event.id], ...(generation === null ? [] : [['generation', String(generation)]])]
  const e =
    what === 'result'
      ? signEvent(keys, { kind: 6100, created_at: at(10), tags, content: `answer ${randomUUID()}` })
      : signEvent(keys, { kind: 7000, created_at: at(20), tags: [['status', what], ...tags], content: randomUUID() })
  const ends = what === 'result' ? 'success' : what === 'error' ? 'error' : null
  const resultKind = what === 'result' ? { resultKind: 6100 } : {}
  return { e, write: { op: 'report', job: job.event.id, generation, ends, accepts: what === 'processing', ...resultKind } }
}

/** The relay's terminal error for `job` at `generation`, and its JobWrite. */
function close(job: SignedEvent, generation: number): { e: SignedEvent; write: JobWrite } {
  const e = signEvent(relay, {
    kind: 7000,
    created_at: at(5),
    tags: [
      ['status', 'error', 'no agent finished it'],
      ['e', job.event.id],
      ['p', requester.pubkey],
      ['generation', String(generation)],
    ],
  })
  return { e, write: { op: 'close', job: job.event.id, generation } }
}

interface Ctx {
  store: EventStore
  jobs: JobLedger
  community: string
  save(e: SignedEvent, job?: JobWrite): Promise<SaveOutcome>
  /** true when the store holds the event */
  holds(e: SignedEvent): Promise<boolean>
  row(job: SignedEvent): Promise<JobRow | undefined>
}

export function describeJobLedgerContract(name: string, open: () => Promise<EventStore>, options: JobLedgerContractOptions = {}): void {
  describe(`${name} jobs table`, () => {
    const ctx = {} as Ctx
    const use = (store: EventStore) => {
      if (!store.jobs) throw new Error(`${name}: the store has no jobs table`)
      const { jobs } = store
      Object.assign(ctx, {
        store,
        jobs,
        save: (e: SignedEvent, job?: JobWrite) => store.save(ctx.community, e.event, e.raw, job),
        holds: async (e: SignedEvent) => idsOf(await store.query(ctx.community, [{ ids: [e.event.id] }], { now: NOW })).length === 1,
        row: (job: SignedEvent) => jobs.job(ctx.community, job.event.id),
      })
    }
    beforeEach(async () => {
      ctx.community = `jobs-${randomUUID()}`
      use(await open())
    })
    afterEach(() => ctx.store.close())

    /** A request saved with its job queued, and (when `to` is given) assigned to `to` at generation 1. */
    async function dispatched(to?: TestKeys): Promise<SignedEvent> {
      const job = request({ content: randomUUID() })
      expect(await ctx.save(job, enqueue())).toEqual({ status: 'saved', removedIds: [] })
      if (to)
        expect(await ctx.jobs.assign(ctx.community, job.event.id, 0, to.pubkey)).toEqual({ status: 'assigned', generation: 1, attempts: 1 })
      return job
    }

    describe('queueing and assigning', () => {
      it('queues a dispatched request as a row at generation 0 with nobody assigned', async () => {
        const job = request()
        expect(await ctx.save(job, enqueue(QUEUED_AT_MS, QUEUED_AT_MS + 30_000))).toEqual({ status: 'saved', removedIds: [] })
        expect(await ctx.row(job)).toEqual({
          id: job.event.id,
          capability: CAPABILITY,
          requester: requester.pubkey,
          kind: 5100,
          state: 'queued',
          generation: 0,
          assignee: null,
          attempts: 0,
          queuedAtMs: QUEUED_AT_MS,
          deadlineAtMs: QUEUED_AT_MS + 30_000,
        })
      })

      it('leaves the row alone when the request arrives again', async () => {
        const job = await dispatched(agent)
        expect(await ctx.save(job, enqueue(QUEUED_AT_MS + 1))).toEqual({ status: 'duplicate' })
        expect(await ctx.row(job)).toMatchObject({ state: 'assigned', generation: 1, assignee: agent.pubkey, queuedAtMs: QUEUED_AT_MS })
      })

      it('keeps no row for a request saved without dispatch', async () => {
        const job = request()
        await ctx.save(job)
        expect(await ctx.row(job)).toBeUndefined()
        expect(await ctx.jobs.assign(ctx.community, job.event.id, 0, agent.pubkey)).toEqual({ status: 'stale', row: undefined })
      })

      it('assigns from generation 0 to generation 1, one attempt, and refuses a second assignment expecting 0', async () => {
        const job = await dispatched()
        expect(await ctx.jobs.assign(ctx.community, job.event.id, 0, agent.pubkey)).toEqual({
          status: 'assigned',
          generation: 1,
          attempts: 1,
        })
        const stale = await ctx.jobs.assign(ctx.community, job.event.id, 0, rival.pubkey)
        expect(stale).toEqual({
          status: 'stale',
          row: expect.objectContaining({ state: 'assigned', generation: 1, assignee: agent.pubkey }),
        })
        expect(await ctx.row(job)).toMatchObject({ state: 'assigned', generation: 1, assignee: agent.pubkey, attempts: 1 })
      })

      it('lets exactly one of two concurrent assignments expecting the same generation win', async () => {
        const job = await dispatched()
        const outcomes = await Promise.all([agent, rival].map((k) => ctx.jobs.assign(ctx.community, job.event.id, 0, k.pubkey)))
        expect(outcomes.map((o) => o.status).sort()).toEqual(['assigned', 'stale'])
        const winner = outcomes[0]!.status === 'assigned' ? agent : rival
        expect(await ctx.row(job)).toMatchObject({ state: 'assigned', generation: 1, assignee: winner.pubkey, attempts: 1 })
      })

      it('puts a job back in the queue under a new generation, fencing out the assignee it had', async () => {
        const job = await dispatched(agent)
        expect(await ctx.jobs.assign(ctx.community, job.event.id, 1, null)).toEqual({ status: 'assigned', generation: 2, attempts: 1 })
        expect(await ctx.row(job)).toMatchObject({ state: 'queued', generation: 2, assignee: null, attempts: 1 })
        const late = report(agent, job, 1, 'result')
        expect(await ctx.save(late.e, late.write)).toEqual({ status: 'fenced', why: expect.stringContaining('superseded') })
        expect(await ctx.holds(late.e)).toBe(false)
        expect(await ctx.jobs.assign(ctx.community, job.event.id, 2, rival.pubkey)).toEqual({
          status: 'assigned',
          generation: 3,
          attempts: 2,
        })
      })
    })

    describe("the assignee's reports", () => {
      it('stores them at the current generation: processing makes the job running, a result ends it in success', async () => {
        const job = await dispatched(agent)
        const accepted = report(agent, job, 1, 'processing')
        expect(await ctx.save(accepted.e, accepted.write)).toEqual({ status: 'saved', removedIds: [] })
        expect(await ctx.row(job)).toMatchObject({ state: 'running', generation: 1 })
        const partial = report(agent, job, 1, 'partial')
        expect(await ctx.save(partial.e, partial.write)).toEqual({ status: 'saved', removedIds: [] })
        expect(await ctx.row(job)).toMatchObject({ state: 'running' })
        const result = report(agent, job, 1, 'result')
        expect(await ctx.save(result.e, result.write)).toEqual({ status: 'saved', removedIds: [] })
        expect(await ctx.row(job)).toMatchObject({ state: 'success', generation: 1, assignee: agent.pubkey })
        expect(await Promise.all([accepted, partial, result].map((r) => ctx.holds(r.e)))).toEqual([true, true, true])
      })

      it("fences a result whose kind is not the request's + 1000, and leaves the job open for the right one", async () => {
        const job = await dispatched(agent)
        const wrong = signEvent(agent, {
          kind: 6999,
          created_at: at(10),
          tags: [
            ['e', job.event.id],
            ['generation', '1'],
          ],
          content: 'x',
        })
        const write: JobWrite = { op: 'report', job: job.event.id, generation: 1, ends: 'success', accepts: false, resultKind: 6999 }
        expect((await ctx.save(wrong, write)).status).toBe('fenced')
        expect(await ctx.holds(wrong)).toBe(false)
        expect(await ctx.row(job)).toMatchObject({ state: 'assigned' })
        const right = report(agent, job, 1, 'result')
        expect((await ctx.save(right.e, right.write)).status).toBe('saved')
      })

      it('ends the job in error on an error report that is not retryable', async () => {
        const job = await dispatched(agent)
        const failed = report(agent, job, 1, 'error')
        expect(await ctx.save(failed.e, failed.write)).toEqual({ status: 'saved', removedIds: [] })
        expect(await ctx.row(job)).toMatchObject({ state: 'error' })
      })

      it('fences a report from another pubkey, and stores none of it', async () => {
        const job = await dispatched(agent)
        const other = report(rival, job, 1, 'result')
        expect(await ctx.save(other.e, other.write)).toEqual({ status: 'fenced', why: expect.stringContaining('not its assignee') })
        expect(await ctx.holds(other.e)).toBe(false)
        expect(await ctx.row(job)).toMatchObject({ state: 'assigned', generation: 1 })
      })

      it('fences a report from an older generation, and one with no generation', async () => {
        const job = await dispatched(rival)
        expect(await ctx.jobs.assign(ctx.community, job.event.id, 1, agent.pubkey)).toEqual({
          status: 'assigned',
          generation: 2,
          attempts: 2,
        })
        const older = report(agent, job, 1, 'processing')
        const bare = report(agent, job, null, 'result')
        for (const r of [older, bare]) {
          expect(await ctx.save(r.e, r.write)).toEqual({ status: 'fenced', why: expect.stringContaining('at generation 2') })
          expect(await ctx.holds(r.e)).toBe(false)
        }
        expect(await ctx.row(job)).toMatchObject({ state: 'assigned', generation: 2, assignee: agent.pubkey })
      })

      it('fences whatever the assignee sends after the job ended', async () => {
        const job = await dispatched(agent)
        const result = report(agent, job, 1, 'result')
        await ctx.save(result.e, result.write)
        const again = report(agent, job, 1, 'result')
        expect(await ctx.save(again.e, again.write)).toEqual({ status: 'fenced', why: expect.stringContaining('ended (success)') })
        expect(await ctx.holds(again.e)).toBe(false)
      })

      it('answers duplicate to a resent stored report, even after the job ended', async () => {
        const job = await dispatched(agent)
        const result = report(agent, job, 1, 'result')
        await ctx.save(result.e, result.write)
        expect(await ctx.save(result.e, result.write)).toEqual({ status: 'duplicate' })
      })

      it('stores a report about a job with no row as it would any event', async () => {
        const plain = request()
        await ctx.save(plain)
        const r = report(agent, plain, null, 'result')
        expect(await ctx.save(r.e, r.write)).toEqual({ status: 'saved', removedIds: [] })
        expect(await ctx.holds(r.e)).toBe(true)
      })
    })

    describe("the relay's terminal error", () => {
      it('ends the job in error at the current generation, and fences a result that comes later', async () => {
        const job = await dispatched(agent)
        const closing = close(job, 1)
        expect(await ctx.save(closing.e, closing.write)).toEqual({ status: 'saved', removedIds: [] })
        expect(await ctx.row(job)).toMatchObject({ state: 'error', generation: 1 })
        const late = report(agent, job, 1, 'result')
        expect(await ctx.save(late.e, late.write)).toEqual({ status: 'fenced', why: expect.stringContaining('ended (error)') })
        expect(await ctx.holds(late.e)).toBe(false)
      })

      it('is fenced at a generation the job has left, and stores nothing', async () => {
        const job = await dispatched(agent)
        await ctx.jobs.assign(ctx.community, job.event.id, 1, null)
        const stale = close(job, 1)
        expect(await ctx.save(stale.e, stale.write)).toEqual({ status: 'fenced', why: expect.stringContaining('superseded') })
        expect(await ctx.holds(stale.e)).toBe(false)
        expect(await ctx.row(job)).toMatchObject({ state: 'queued', generation: 2 })
      })
    })

    describe('cancelling', () => {
      it("cancels the job of a request its author deletes (NIP-09) and fences its assignee's reports", async () => {
        const job = await dispatched(agent)
        const deletion = signEvent(requester, { kind: 5, created_at: at(1), tags: [['e', job.event.id]] })
        expect(await ctx.save(deletion)).toEqual({ status: 'saved', removedIds: [job.event.id] })
        expect(await ctx.row(job)).toMatchObject({ state: 'cancelled', generation: 2 })
        const late = report(agent, job, 1, 'result')
        expect(await ctx.save(late.e, late.write)).toEqual({ status: 'fenced', why: expect.stringContaining('ended (cancelled)') })
        expect(await ctx.holds(late.e)).toBe(false)
      })

      it('leaves the job of a request someone else tries to delete', async () => {
        const job = await dispatched(agent)
        const deletion = signEvent(rival, { kind: 5, created_at: at(1), tags: [['e', job.event.id]] })
        expect(await ctx.save(deletion)).toEqual({ status: 'saved', removedIds: [] })
        expect(await ctx.row(job)).toMatchObject({ state: 'assigned', generation: 1 })
      })

      it('cancels the job of a request removed outright (deleteEvents) and fences its assignee', async () => {
        const job = await dispatched(agent)
        const ended = await dispatched(agent)
        const result = report(agent, ended, 1, 'result')
        await ctx.save(result.e, result.write)
        expect(await ctx.store.deleteEvents(ctx.community, [job.event.id, ended.event.id])).toEqual([job.event.id, ended.event.id])
        expect(await ctx.row(job)).toMatchObject({ state: 'cancelled', generation: 2 })
        // an ended job keeps its end
        expect(await ctx.row(ended)).toMatchObject({ state: 'success', generation: 1 })
        const late = report(agent, job, 1, 'processing')
        expect(await ctx.save(late.e, late.write)).toEqual({ status: 'fenced', why: expect.stringContaining('ended (cancelled)') })
      })
    })

    describe('open jobs', () => {
      it("lists a capability's open jobs oldest first, up to the limit, without ended ones or other capabilities", async () => {
        const save = async (queuedAtMs: number, capability = CAPABILITY) => {
          const job = request({ capability, content: randomUUID() })
          await ctx.save(job, enqueue(queuedAtMs, null, capability))
          return job
        }
        // saved out of their queue order
        const third = await save(QUEUED_AT_MS + 3)
        const first = await save(QUEUED_AT_MS + 1)
        const ended = await save(QUEUED_AT_MS)
        const second = await save(QUEUED_AT_MS + 2)
        await save(QUEUED_AT_MS - 1, 'translate')
        await ctx.jobs.assign(ctx.community, ended.event.id, 0, agent.pubkey)
        const result = report(agent, ended, 1, 'result')
        await ctx.save(result.e, result.write)
        await ctx.jobs.assign(ctx.community, second.event.id, 0, agent.pubkey)
        const list = await ctx.jobs.openJobs(ctx.community, CAPABILITY, 10)
        expect(list.map((j) => j.id)).toEqual([first, second, third].map((j) => j.event.id))
        expect(list.map((j) => j.state)).toEqual(['queued', 'assigned', 'queued'])
        expect((await ctx.jobs.openJobs(ctx.community, CAPABILITY, 2)).map((j) => j.id)).toEqual([first.event.id, second.event.id])
        const page2 = await ctx.jobs.openJobs(ctx.community, CAPABILITY, 2, list[1])
        expect(page2.map((j) => j.id)).toEqual([third.event.id])
        expect(await ctx.jobs.openJobs(ctx.community, CAPABILITY, 2, list[2])).toEqual([])
        expect(await ctx.jobs.openJobs(`${ctx.community}-other`, CAPABILITY, 10)).toEqual([])
        expect((await ctx.jobs.openCapabilities(ctx.community)).sort()).toEqual([CAPABILITY, 'translate'].sort())
      })

      it('names no capability once its jobs have ended', async () => {
        const job = await dispatched()
        expect(await ctx.jobs.openCapabilities(ctx.community)).toEqual([CAPABILITY])
        await ctx.jobs.assign(ctx.community, job.event.id, 0, agent.pubkey)
        const result = report(agent, job, 1, 'result')
        await ctx.save(result.e, result.write)
        expect(await ctx.jobs.openCapabilities(ctx.community)).toEqual([])
      })

      it.runIf(options.reopen)('still holds a queued job after the store is reopened', async () => {
        const job = await dispatched()
        use(await options.reopen!(ctx.store))
        expect(await ctx.row(job)).toMatchObject({ state: 'queued', generation: 0, requester: requester.pubkey })
        expect((await ctx.jobs.openJobs(ctx.community, CAPABILITY, 10)).map((j) => j.id)).toEqual([job.event.id])
      })
    })
  })
}
