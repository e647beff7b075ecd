import { describe, expect, it } from 'vitest'
import { ChunkStream, MAX_CHUNKS_AHEAD } from '../../../src/client/agent/job-chunks'
import { type AgentClient, type JobChunk, JobError, type JobHandler, RetryableJobError, type ServedJob } from '../../../src/client/index'
import type { NostrEvent } from '../../../src/protocols/nip01/event'
import { FakeClock } from './fake-clock'
import {
  assignment,
  assignmentFeed,
  awaitSent,
  communityKey,
  feedbackOn,
  jobRequest,
  reqFrame,
  requesterKey,
  revocation,
  sentAbout,
  sentEvents,
  sign,
  strangerKey,
  tagOf,
  terminalError,
  workerKey,
} from './job-fixtures'
import { type Answer, okAll, type ScriptedRelay, startScriptedRelay, useAgents } from './scripted-relay'

const { agentOn, track } = useAgents()

const scripted = async (answer: Answer = okAll) => {
  const r = await startScriptedRelay(answer, undefined, { info: { self: communityKey.pubkey } })
  track({ stop: () => r.close() })
  return r
}

/**
 * An ACTIVE agent serving what `setup` serves, plus `ping` (answers `pong`): a ping's result proves the agent
 * has handled every frame sent before its assignment, so a test can assert what was not sent without a sleep.
 */
async function servingAgent(setup: (agent: AgentClient) => void, answer?: Answer) {
  const r = await scripted(answer)
  const agent = agentOn(r, { capabilities: [] })
  setup(agent)
  agent.serve('ping', () => 'pong')
  await agent.start()
  const assign = await assignmentFeed(r, agent)
  const roundTrip = async () => {
    const ping = jobRequest('ping', 'ping')
    assign(assignment(ping, agent.pubkey, 1))
    await awaitSent(() => sentAbout(r, ping.id, 6050)[0], 'the ping result')
  }
  return { r, agent, assign, roundTrip }
}

/**
 * A handler that runs until its signal fires, then resolves `value`; `started` resolves once it runs (a
 * revocation that comes before is handled without calling it at all).
 */
function waitingForAbort(value: string) {
  const reasons: unknown[] = []
  let markStarted: () => void = () => {}
  const started = new Promise<void>((resolve) => (markStarted = resolve))
  const handler: JobHandler = (_job, ctx) =>
    new Promise((resolve) => {
      ctx.signal.addEventListener('abort', () => {
        reasons.push(ctx.signal.reason)
        resolve(value)
      })
      markStarted()
    })
  return { handler, started, reasons }
}

/** OK for everything but the agent's events about `job` that `holds` picks: their OK waits in `held` */
function holdingOks(job: () => string, holds: (e: NostrEvent) => boolean) {
  const held: (() => void)[] = []
  const answer: Answer = (f, ws, c) => {
    const e = f[1] as NostrEvent
    if (f[0] === 'EVENT' && tagOf(e, 'e')?.[1] === job() && holds(e)) held.push(() => okAll(f, ws, c))
    else okAll(f, ws, c)
  }
  return { held, answer }
}

const refuseKind =
  (kind: number, reason: string): Answer =>
  (f, ws, c) => {
    if (f[0] === 'EVENT' && (f[1] as NostrEvent).kind === kind) ws.send(JSON.stringify(['OK', (f[1] as NostrEvent).id, false, reason]))
    else okAll(f, ws, c)
  }

describe('serving dispatched jobs', () => {
  it('hands an assignment to the handler, accepts it with `processing`, then publishes the result with the generation', async () => {
    const seen: ServedJob[] = []
    const { r, agent, assign } = await servingAgent((a) =>
      a.serve('echo', async (job) => {
        seen.push(job)
        return { echoed: job.input }
      }),
    )
    const request = jobRequest('hello')
    assign(assignment(request, agent.pubkey, 3))
    const result = await awaitSent(() => sentAbout(r, request.id, 6050)[0], 'the result')
    const processing = feedbackOn(r, request.id, 'processing')!
    const ref = [
      ['e', request.id],
      ['p', requesterKey.pubkey],
      ['generation', '3'],
    ]
    expect(processing.tags).toEqual([['status', 'processing'], ...ref])
    expect(sentEvents(r).indexOf(processing)).toBeLessThan(sentEvents(r).indexOf(result))
    expect(result.tags).toEqual(ref)
    expect(result.content).toBe('{"echoed":"hello"}')
    expect(seen).toEqual([{ id: request.id, capability: 'echo', input: 'hello', request, requester: requesterKey.pubkey, generation: 3 }])
  })

  it('announces the capabilities it serves with a `concurrency` tag, and again when it serves one more', async () => {
    const { r, agent } = await servingAgent((a) => a.serve('echo', () => '', { concurrency: 2, kinds: [5050] }))
    const first = sentEvents(r).find((e) => e.kind === 31990)!
    expect(first.tags).toEqual([
      ['d', 'apiary-agent'],
      ['c', 'echo'],
      ['c', 'ping'],
      ['k', '5050'],
      ['concurrency', '2', 'echo'],
      ['concurrency', '1', 'ping'],
    ])
    agent.serve('translate', () => '', { concurrency: 4 })
    const again = await awaitSent(() => sentEvents(r).filter((e) => e.kind === 31990)[1], 'the new announcement')
    expect(again.tags).toContainEqual(['c', 'translate'])
    expect(again.tags).toContainEqual(['concurrency', '4', 'translate'])
    expect(again.tags).toContainEqual(['concurrency', '2', 'echo'])
    expect(again.created_at).toBeGreaterThan(first.created_at)
  })

  it('fires ctx.signal when the relay revokes the assignment, and sends nothing the handler returns after', async () => {
    const { handler, started, reasons } = waitingForAbort('too late')
    const { r, agent, assign, roundTrip } = await servingAgent((a) => a.serve('echo', handler))
    const request = jobRequest('slow')
    assign(assignment(request, agent.pubkey, 1))
    await started
    assign(revocation(request, agent.pubkey, 1, 'cancelled'))
    await roundTrip()
    expect(reasons).toHaveLength(1)
    expect(reasons[0]).toBeInstanceOf(JobError)
    expect(reasons[0]).toMatchObject({ code: 'cancelled' })
    expect(sentAbout(r, request.id, 6050)).toEqual([])
  })

  it('does not run a handler whose assignment was revoked before the relay answered its `processing`', async () => {
    const started: string[] = []
    const request = jobRequest('revoked early')
    const { held, answer } = holdingOks(
      () => request.id,
      (e) => e.kind === 7000,
    )
    const { r, agent, assign, roundTrip } = await servingAgent((a) => a.serve('echo', (job) => started.push(job.id)), answer)
    assign(assignment(request, agent.pubkey, 1))
    await awaitSent(() => held[0], 'the processing held')
    assign(revocation(request, agent.pubkey, 1, 'superseded'))
    await roundTrip()
    held[0]!()
    await roundTrip()
    expect(started).toEqual([])
    expect(sentAbout(r, request.id, 6050)).toEqual([])
  })

  it("frees the handler's slot before its result leaves: an assignment that arrives before the result's OK is taken", async () => {
    const first = jobRequest('first')
    const { held, answer } = holdingOks(
      () => first.id,
      (e) => e.kind === 6050,
    )
    const { r, agent, assign } = await servingAgent((a) => a.serve('echo', (job) => `done: ${job.input}`), answer)
    assign(assignment(first, agent.pubkey, 1))
    await awaitSent(() => held[0], 'the first result')
    const second = jobRequest('second')
    assign(assignment(second, agent.pubkey, 1))
    await awaitSent(() => sentAbout(r, second.id, 6050)[0], 'the second result')
    expect(feedbackOn(r, second.id, 'error')).toBeUndefined()
    held[0]!()
  })

  it('fires ctx.signal on an OK false `restricted:` to a chunk, and sends no later chunk nor the result', async () => {
    const errors: unknown[] = []
    let abortedAfterFirst: boolean | undefined
    let handlerDone: () => void = () => {}
    const done = new Promise<void>((resolve) => (handlerDone = resolve))
    const { r, agent, assign, roundTrip } = await servingAgent(
      (a) =>
        a.serve('echo', async (_job, ctx) => {
          await ctx.stream('a').catch((e: unknown) => errors.push(e))
          abortedAfterFirst = ctx.signal.aborted
          await ctx.stream('b').catch((e: unknown) => errors.push(e))
          handlerDone()
          return 'the whole answer'
        }),
      refuseKind(25901, 'restricted: not the assignee of this job at generation 1'),
    )
    const request = jobRequest('stream it')
    assign(assignment(request, agent.pubkey, 1))
    await done
    await roundTrip()
    expect(abortedAfterFirst).toBe(true)
    expect(errors.map((e) => (e as JobError).code)).toEqual(['superseded', 'superseded'])
    const chunks = sentAbout(r, request.id, 25901)
    expect(chunks).toHaveLength(1)
    expect(chunks[0]!.tags).toContainEqual(['seq', '0'])
    expect(sentAbout(r, request.id, 6050)).toEqual([])
  })

  it('fires ctx.signal when the connection is lost', async () => {
    const { handler, started, reasons } = waitingForAbort('too late')
    const { r, agent, assign } = await servingAgent((a) => a.serve('echo', handler))
    assign(assignment(jobRequest('slow'), agent.pubkey, 1))
    await started
    r.connections[0]!.ws.terminate()
    await awaitSent(() => reasons[0], 'the abort')
    expect(reasons[0]).toMatchObject({ code: 'unavailable' })
  })

  it('ignores an assignment signed by another key than the relay advertises as NIP-11 self', async () => {
    const started: string[] = []
    const { r, agent, assign, roundTrip } = await servingAgent((a) => a.serve('echo', (job) => started.push(job.id)))
    const forged = jobRequest('forged')
    assign(assignment(forged, agent.pubkey, 1, strangerKey))
    await roundTrip()
    expect(started).toEqual([])
    expect(sentEvents(r).filter((e) => tagOf(e, 'e')?.[1] === forged.id)).toEqual([])
  })

  it('refuses an assignment past its concurrency with an error carrying `retry`, and runs the first to its end', async () => {
    const started: string[] = []
    let release: (v: string) => void = () => {}
    const gate = new Promise<string>((resolve) => (release = resolve))
    const { r, agent, assign } = await servingAgent((a) =>
      a.serve('echo', (job) => {
        started.push(job.id)
        return gate
      }),
    )
    const [first, second] = [jobRequest('one'), jobRequest('two')]
    assign(assignment(first, agent.pubkey, 1))
    await awaitSent(() => feedbackOn(r, first.id, 'processing'), 'the first accepted')
    assign(assignment(second, agent.pubkey, 2))
    const refusal = await awaitSent(() => feedbackOn(r, second.id, 'error'), 'the refusal')
    expect(refusal.tags).toContainEqual(['retry'])
    expect(refusal.tags).toContainEqual(['generation', '2'])
    expect(feedbackOn(r, second.id, 'processing')).toBeUndefined()
    release('done')
    expect((await awaitSent(() => sentAbout(r, first.id, 6050)[0], 'the first result')).content).toBe('done')
    expect(started).toEqual([first.id])
  })

  it('answers an error with `retry` for a RetryableJobError, without it for another error, and refuses once serving stopped', async () => {
    let stopEcho: () => void = () => {}
    const { r, agent, assign } = await servingAgent((a) => {
      stopEcho = a.serve(
        'echo',
        (job) => {
          throw job.input === 'again' ? new RetryableJobError('model overloaded') : new Error('cannot parse the input')
        },
        { concurrency: 2 },
      )
    })
    const [again, bad, late] = [jobRequest('again'), jobRequest('bad'), jobRequest('late')]
    assign(assignment(again, agent.pubkey, 1))
    assign(assignment(bad, agent.pubkey, 1))
    const retryable = await awaitSent(() => feedbackOn(r, again.id, 'error'), 'the retryable error')
    const final = await awaitSent(() => feedbackOn(r, bad.id, 'error'), 'the final error')
    expect(retryable.tags).toContainEqual(['status', 'error', 'model overloaded'])
    expect(retryable.tags).toContainEqual(['retry'])
    expect(final.tags).toContainEqual(['status', 'error', 'cannot parse the input'])
    expect(final.tags).not.toContainEqual(['retry'])
    stopEcho()
    assign(assignment(late, agent.pubkey, 1))
    const refused = await awaitSent(() => feedbackOn(r, late.id, 'error'), 'the refusal after stop')
    expect(refused.tags).toContainEqual(['retry'])
    expect(feedbackOn(r, late.id, 'processing')).toBeUndefined()
  })
})

/**
 * A relay that answers a job request as `reply(request)` says: OK true (or `refuse`), then the events it
 * returns, delivered on the subscription the agent made for the job's answers.
 */
async function requestingAgent(reply: (request: NostrEvent) => NostrEvent[] = () => [], refuse?: string, extra = {}) {
  const r: ScriptedRelay = await scripted((f, ws, c) => {
    const e = f[1] as NostrEvent
    if (f[0] !== 'EVENT' || e.kind < 5000 || e.kind > 5999) return okAll(f, ws, c)
    ws.send(JSON.stringify(['OK', e.id, refuse === undefined, refuse ?? '']))
    const req = reqFrame(r, (filter) => (filter['#e'] as string[] | undefined)?.includes(e.id) === true)
    for (const answer of reply(e)) ws.send(JSON.stringify(['EVENT', req?.[1], answer]))
  })
  const agent = agentOn(r, { capabilities: [], ...extra })
  await agent.start()
  return { r, agent }
}

const ref = (request: NostrEvent, generation: number) => [
  ['e', request.id],
  ['p', request.pubkey],
  ['generation', String(generation)],
]
const chunk = (request: NostrEvent, generation: number, seq: number, data: string) =>
  sign(workerKey, { kind: 25901, tags: [...ref(request, generation), ['seq', String(seq)]], content: data })

describe('requesting a dispatched job', () => {
  it('subscribes to its answers, then publishes the request with its tags, and resolves with the result', async () => {
    const { r, agent } = await requestingAgent((request) => [
      sign(workerKey, { kind: 7000, tags: [['status', 'processing'], ...ref(request, 1)], content: '' }),
      sign(workerKey, { kind: 6000, tags: ref(request, 1), content: 'HELLO' }),
    ])
    const call = agent.request('upper', 'hello', { deadlineMs: 30_000, tags: [['param', 'lang', 'en']] })
    const result = await call
    expect(result).toMatchObject({ content: 'HELLO', agent: workerKey.pubkey })
    expect(result.event.kind).toBe(6000)
    const frames = r.connections[0]!.frames
    const reqAt = frames.findIndex(
      (f) => f[0] === 'REQ' && JSON.stringify(f[2]) === JSON.stringify({ kinds: [7000, 6000, 25901], '#e': [call.id] }),
    )
    const eventAt = frames.findIndex((f) => f[0] === 'EVENT' && (f[1] as NostrEvent).id === call.id)
    expect(reqAt).toBeGreaterThanOrEqual(0)
    expect(eventAt).toBeGreaterThan(reqAt)
    expect(frames[eventAt]![1]).toMatchObject({
      kind: 5000,
      content: '',
      tags: [['c', 'upper'], ['dispatch'], ['i', 'hello', 'text'], ['deadline_ms', '30000'], ['param', 'lang', 'en']],
    })
    await awaitSent(() => frames.find((f) => f[0] === 'CLOSE' && f[1] === frames[reqAt]![1]), 'the CLOSE once answered')
  })

  it("rejects with the relay's coded error, after an agent's error with `retry` that did not end the job", async () => {
    const { agent } = await requestingAgent((request) => [
      sign(workerKey, { kind: 7000, tags: [['status', 'error', 'overloaded'], ...ref(request, 1), ['retry']], content: '' }),
      terminalError(request.id, request.pubkey, 'exhausted'),
    ])
    const error = (await agent.request('echo', 'x').catch((e: unknown) => e)) as JobError
    expect(error).toBeInstanceOf(JobError)
    expect(error.code).toBe('exhausted')
    expect(error.event?.pubkey).toBe(communityKey.pubkey)
  })

  it("rejects `failed` with the agent's message on its error without `retry`", async () => {
    const { agent } = await requestingAgent((request) => [
      sign(workerKey, {
        kind: 7000,
        tags: [['status', 'error', 'cannot parse the input'], ...ref(request, 2), ['code', 'cancelled']],
        content: '',
      }),
    ])
    const error = (await agent.request('echo', 'x').catch((e: unknown) => e)) as JobError
    expect(error).toMatchObject({ code: 'failed', message: 'cannot parse the input' })
  })

  it('rejects `refused` with the reason when the relay answers the request OK false', async () => {
    const { agent } = await requestingAgent(undefined, 'rate-limited: the queue of echo is full', { retry: { maxAttempts: 1 } })
    const error = (await agent.request('echo', 'x').catch((e: unknown) => e)) as JobError
    expect(error.code).toBe('refused')
    expect(error.reason).toMatch(/^rate-limited: /)
  })

  it('rejects `refused` when the request, queued as its connection was lost, is refused after the reconnect', async () => {
    // the first connection goes as the request arrives (no OK): the request waits in the offline queue
    const r = await scripted((f, ws, c) => {
      const e = f[1] as NostrEvent
      if (f[0] !== 'EVENT' || e.kind !== 5000) return okAll(f, ws, c)
      if (c === 0) ws.terminate()
      else ws.send(JSON.stringify(['OK', e.id, false, 'invalid: deadline_ms is past what this relay allows']))
    })
    const agent = agentOn(r, { capabilities: [], reconnect: { minMs: 50, maxMs: 100 } })
    await agent.start()
    const error = (await agent.request('echo', 'x', { deadlineMs: 60_000 }).catch((e: unknown) => e)) as JobError
    expect(error).toBeInstanceOf(JobError)
    expect(error.code).toBe('refused')
    expect(error.reason).toMatch(/^invalid: deadline_ms/)
    expect(r.connections.length).toBe(2)
  })

  it('yields chunks in seq order, once each, restarting at a higher generation, and ends with the call', async () => {
    const { agent } = await requestingAgent((request) => [
      chunk(request, 1, 1, 'b'),
      chunk(request, 1, 0, 'a'),
      chunk(request, 1, 0, 'a again'),
      chunk(request, 1, 2, 'c'),
      chunk(request, 2, 1, 'y'),
      chunk(request, 1, 3, 'from the superseded agent'),
      chunk(request, 2, 0, 'x'),
      sign(workerKey, { kind: 6000, tags: ref(request, 2), content: 'xy' }),
    ])
    const call = agent.request('echo', 'x')
    const got: JobChunk[] = []
    for await (const c of call.chunks) got.push(c)
    expect(got).toEqual([
      { data: 'a', seq: 0, generation: 1 },
      { data: 'b', seq: 1, generation: 1 },
      { data: 'c', seq: 2, generation: 1 },
      { data: 'x', seq: 0, generation: 2 },
      { data: 'y', seq: 1, generation: 2 },
    ])
    expect((await call).content).toBe('xy')
  })

  it('cancel() publishes the NIP-09 deletion of the request and rejects the call `cancelled`', async () => {
    const { r, agent } = await requestingAgent()
    const call = agent.request('echo', 'x', { kind: 5050 })
    await awaitSent(() => sentEvents(r).find((e) => e.id === call.id), 'the request')
    const rejected = call.catch((e: unknown) => e)
    await call.cancel()
    expect(await rejected).toMatchObject({ code: 'cancelled' })
    const deletion = await awaitSent(() => sentEvents(r).find((e) => e.kind === 5), 'the deletion')
    expect(deletion.tags).toEqual([
      ['e', call.id],
      ['k', '5050'],
    ])
  })

  it('rejects `deadline` by itself when no answer came 5 s past the deadline', async () => {
    const clock = new FakeClock(Date.now())
    const { agent } = await requestingAgent(undefined, undefined, { clock })
    let outcome: unknown
    const rejected = agent.request('echo', 'x', { deadlineMs: 1000 }).catch((e: unknown) => (outcome = e))
    await clock.advance(5999)
    expect(outcome).toBeUndefined()
    await clock.advance(1)
    expect(await rejected).toMatchObject({ code: 'deadline' })
  })

  it('rejects `unavailable` when the agent stops before the answer', async () => {
    const { agent } = await requestingAgent()
    const rejected = agent.request('echo', 'x').catch((e: unknown) => e)
    await agent.stop()
    expect(await rejected).toMatchObject({ code: 'unavailable' })
  })
})

describe('the chunk stream', () => {
  it('gives an iterator begun after the end every chunk delivered, and drops what waited behind a gap', async () => {
    const s = new ChunkStream()
    s.push(1, 0, 'a')
    s.push(1, 2, 'c')
    s.push(1, MAX_CHUNKS_AHEAD + 1, 'too far ahead')
    s.end()
    const got: string[] = []
    for await (const c of s) got.push(c.data)
    expect(got).toEqual(['a'])
  })
})
