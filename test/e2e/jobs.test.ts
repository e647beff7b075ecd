import { bytesToHex } from '@noble/hashes/utils.js'
import { afterEach, describe, expect, it } from 'vitest'
import { AgentClient, JobError } from '../../src/client/index'
import type { ConfigInput } from '../../src/infra/config'
import { KIND_JOB_ASSIGNMENT, KIND_JOB_CHUNK } from '../../src/protocols/jobs'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { verifyEventNoble } from '../../src/protocols/nip01/event'
import { makeKeys, type SignedEvent, signEvent, type TestKeys } from '../support/events'
import { eventually } from '../support/eventually'
import { labelledMetric, metric } from '../support/metrics'
import { managementUrl, nip98Header, postNip86, rpc } from '../support/nip86-client'
import type { TestRelay } from '../support/relay'
import { auth, client, newSubId, publish, relayUrlOf, reqEvents } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'
import type { Frame, TestClient } from '../support/ws-client'

/**
 * Dispatched jobs on one relay (docs/jobs.md), both sides played by raw clients so every frame is the wire
 * contract: agents that AUTH, announce a capability, heartbeat and listen for assignments; requesters that
 * subscribe to their job and publish it.
 */
const FAST: ConfigInput = { jobs: { acceptTimeoutMs: 400 }, agentOrphanScanSeconds: 0.05 }

interface Agent {
  keys: TestKeys
  c: TestClient
  subId: string
}

async function authed(r: TestRelay, keys: TestKeys): Promise<TestClient> {
  const c = await client(r)
  expect((await auth(c, keys, relayUrlOf(r))).accepted).toBe(true)
  return c
}

/** An agent connection offering `capability`: announced, heartbeating once (ACTIVE), listening for assignments. */
async function agentOn(
  r: TestRelay,
  capability: string,
  opts: { keys?: TestKeys; concurrency?: number; tags?: string[][] } = {},
): Promise<Agent> {
  const keys = opts.keys ?? makeKeys()
  const c = await authed(r, keys)
  const subId = newSubId('assignments')
  c.send(['REQ', subId, { kinds: [KIND_JOB_ASSIGNMENT], '#p': [keys.pubkey] }])
  await c.next((f) => f[0] === 'EOSE' && f[1] === subId)
  const tags = [
    ['d', 'apiary-agent'],
    ['c', capability],
    ...(opts.concurrency ? [['concurrency', String(opts.concurrency)]] : []),
    ...(opts.tags ?? []),
  ]
  expect((await publish(c, signEvent(keys, { kind: 31990, tags, content: '{}' }))).accepted).toBe(true)
  expect((await publish(c, signEvent(keys, { kind: 20001, content: `online ${Math.random()}` }))).accepted).toBe(true)
  return { keys, c, subId }
}

const request = (keys: TestKeys, capability: string, input: string, extra: string[][] = []): SignedEvent =>
  signEvent(keys, { kind: 5050, tags: [['c', capability], ['dispatch'], ['i', input, 'text'], ...extra], content: '' })

/** A requester subscribed to its job, then publishing it. */
async function requestJob(r: TestRelay, capability: string, input: string, extra: string[][] = []) {
  const keys = makeKeys()
  const c = await authed(r, keys)
  const job = request(keys, capability, input, extra)
  const subId = newSubId('job')
  c.send(['REQ', subId, { kinds: [7000, 6050, KIND_JOB_CHUNK], '#e': [job.event.id] }])
  await c.next((f) => f[0] === 'EOSE' && f[1] === subId)
  const ok = await publish(c, job)
  return { keys, c, job, subId, ok }
}

const isEventOn =
  (subId: string, pred: (e: NostrEvent) => boolean = () => true) =>
  (f: Frame) =>
    f[0] === 'EVENT' && f[1] === subId && pred(f[2] as NostrEvent)
const tagOf = (e: NostrEvent, name: string) => e.tags.find((t) => t[0] === name)?.[1]

async function nextAssignment(a: Agent, timeoutMs = 5_000): Promise<NostrEvent> {
  return (
    await a.c.next(
      isEventOn(a.subId, (e) => tagOf(e, 'status') === 'assigned'),
      timeoutMs,
    )
  )[2] as NostrEvent
}

/** What the assignee sends: feedback or a result, with the generation it was given. */
function report(a: Agent, assignment: NostrEvent, kind: number, tags: string[][], content = ''): SignedEvent {
  const requester = (JSON.parse(assignment.content) as NostrEvent).pubkey
  return signEvent(a.keys, {
    kind,
    tags: [['e', tagOf(assignment, 'e')!], ['p', requester], ['generation', tagOf(assignment, 'generation')!], ...tags],
    content,
  })
}

const selfOf = async (r: TestRelay): Promise<string> => r.relay.communityPubkey('default')!
const ended = (r: TestRelay, outcome: string) => labelledMetric(r, 'apiary_jobs_ended_total', { outcome })

const clients: AgentClient[] = []
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.stop()))
})

describe('dispatched jobs on one relay', () => {
  const relays = useRelays()

  it("rejects a request 'unavailable' when the relay refuses the subscription for its answers", async () => {
    const r = await relays.start({ ...FAST, limits: { maxSubscriptions: 2 } })
    const requester = new AgentClient({ relays: [r.url], secretKey: bytesToHex(makeKeys().secretKey), capabilities: [] })
    clients.push(requester)
    await requester.start()
    const calls = [0, 1, 2].map((i) => requester.request('nobody', `x${i}`))
    const third = (await calls[2]!.catch((e: unknown) => e)) as JobError
    expect(third).toBeInstanceOf(JobError)
    expect(third.code).toBe('unavailable')
    expect(third.reason).toMatch(/^blocked: /)
  })

  it('queues a request, assigns it to the one live agent with a relay-signed assignment, and delivers its result once', async () => {
    const r = await relays.start(FAST)
    const agent = await agentOn(r, 'echo')
    const req = await requestJob(r, 'echo', 'hello')
    expect(req.ok.accepted).toBe(true)

    const assignment = await nextAssignment(agent)
    expect(assignment.pubkey).toBe(await selfOf(r))
    expect(verifyEventNoble(assignment)).toBe('ok')
    expect(tagOf(assignment, 'e')).toBe(req.job.event.id)
    expect(tagOf(assignment, 'generation')).toBe('1')
    expect(tagOf(assignment, 'c')).toBe('echo')
    expect(JSON.parse(assignment.content)).toEqual(req.job.event)

    expect((await publish(agent.c, report(agent, assignment, 7000, [['status', 'processing']]))).accepted).toBe(true)
    const result = report(agent, assignment, 6050, [], 'HELLO')
    expect((await publish(agent.c, result)).accepted).toBe(true)

    const got = await req.c.next(isEventOn(req.subId, (e) => e.kind === 6050))
    expect((got[2] as NostrEvent).content).toBe('HELLO')
    // one final answer: a second result from the same assignee is refused
    const again = await publish(agent.c, report(agent, assignment, 6050, [], 'HELLO twice'))
    expect(again.prefix).toBe('restricted')
    await eventually(
      () => ended(r, 'success'),
      (n) => n === 1,
      'one job ended success',
    )
    expect(await metric(r, 'apiary_jobs_queued_total')).toBe(1)
  })

  it('hands the job to another agent under generation 2 when its assignee disconnects, and refuses the first one afterwards', async () => {
    const r = await relays.start(FAST)
    const first = await agentOn(r, 'echo')
    const req = await requestJob(r, 'echo', 'x')
    const a1 = await nextAssignment(first)
    expect((await publish(first.c, report(first, a1, 7000, [['status', 'processing']]))).accepted).toBe(true)
    const second = await agentOn(r, 'echo')
    first.c.close()
    const a2 = await nextAssignment(second)
    expect(tagOf(a2, 'generation')).toBe('2')
    expect(tagOf(a2, 'e')).toBe(req.job.event.id)

    // the first agent comes back on a new connection with its old generation: fenced
    const back = await authed(r, first.keys)
    const late = await publish(back, report(first, a1, 6050, [], 'late'))
    expect(late.prefix).toBe('restricted')
    expect(await metric(r, 'apiary_job_reports_fenced_total')).toBeGreaterThanOrEqual(1)

    expect((await publish(second.c, report(second, a2, 6050, [], 'done'))).accepted).toBe(true)
    const results = await reqEvents(req.c, [{ kinds: [6050], '#e': [req.job.event.id] }])
    expect(results.map((e) => e.content)).toEqual(['done'])
  })

  it("relays the assignee's chunks to the requester in order and refuses a chunk from anyone else", async () => {
    const r = await relays.start(FAST)
    const agent = await agentOn(r, 'echo')
    const req = await requestJob(r, 'echo', 'stream')
    const a = await nextAssignment(agent)
    for (let seq = 0; seq < 5; seq++) {
      expect((await publish(agent.c, report(agent, a, KIND_JOB_CHUNK, [['seq', String(seq)]], `part ${seq}`))).accepted).toBe(true)
    }
    const stranger = await agentOn(r, 'other')
    const forged = signEvent(stranger.keys, {
      kind: KIND_JOB_CHUNK,
      tags: [
        ['e', req.job.event.id],
        ['p', req.keys.pubkey],
        ['generation', '1'],
        ['seq', '5'],
      ],
      content: 'forged',
    })
    expect((await publish(stranger.c, forged)).prefix).toBe('restricted')
    const wrongGeneration = report(
      agent,
      { ...a, tags: a.tags.map((t) => (t[0] === 'generation' ? ['generation', '2'] : t)) },
      KIND_JOB_CHUNK,
      [['seq', '5']],
      'x',
    )
    expect((await publish(agent.c, wrongGeneration)).prefix).toBe('restricted')
    const chunks: string[] = []
    for (let i = 0; i < 5; i++)
      chunks.push(((await req.c.next(isEventOn(req.subId, (e) => e.kind === KIND_JOB_CHUNK)))[2] as NostrEvent).content)
    expect(chunks).toEqual(['part 0', 'part 1', 'part 2', 'part 3', 'part 4'])
  })

  it('reassigns a job its agent refuses with "retry", and ends it "exhausted" after jobs.maxAttempts', async () => {
    const r = await relays.start({ ...FAST, jobs: { acceptTimeoutMs: 400, maxAttempts: 2 } })
    const one = await agentOn(r, 'echo')
    const two = await agentOn(r, 'echo')
    const req = await requestJob(r, 'echo', 'nobody wants this')
    const assignmentsOf = (a: Agent) =>
      a.c.frames.filter(isEventOn(a.subId, (e) => tagOf(e, 'status') === 'assigned')).map((f) => f[2] as NostrEvent)
    const assignees: string[] = []
    for (let i = 0; i < 2; i++) {
      const [agent, a] = await eventually(
        () =>
          [one, two]
            .flatMap((ag) => assignmentsOf(ag).map((e) => [ag, e] as const))
            .find(([, e]) => tagOf(e, 'generation') === String(i + 1)),
        (found) => found !== undefined,
        `assignment ${i + 1}`,
      ).then((found) => found!)
      assignees.push(agent.keys.pubkey)
      expect((await publish(agent.c, report(agent, a, 7000, [['status', 'error', 'busy'], ['retry']]))).accepted).toBe(true)
    }
    // the second assignment went to the agent that had not refused it
    expect(new Set(assignees).size).toBe(2)
    const terminal = (await req.c.next(isEventOn(req.subId, (e) => e.kind === 7000 && tagOf(e, 'code') === 'exhausted')))[2] as NostrEvent
    expect(terminal.pubkey).toBe(await selfOf(r))
    expect(tagOf(terminal, 'status')).toBe('error')
    await eventually(
      () => ended(r, 'exhausted'),
      (n) => n === 1,
      'one job ended exhausted',
    )
  })

  it('takes the job from an agent that does not accept within jobs.acceptTimeoutMs and revokes its assignment', async () => {
    const r = await relays.start(FAST)
    const sleepy = await agentOn(r, 'echo')
    const req = await requestJob(r, 'echo', 'x')
    const a1 = await nextAssignment(sleepy)
    const awake = await agentOn(r, 'echo')
    const revoked = (await sleepy.c.next(isEventOn(sleepy.subId, (e) => tagOf(e, 'status') === 'revoked')))[2] as NostrEvent
    expect(tagOf(revoked, 'code')).toBe('superseded')
    expect(tagOf(revoked, 'generation')).toBe('1')
    const a2 = await nextAssignment(awake)
    expect(tagOf(a2, 'generation')).toBe('2')
    expect((await publish(sleepy.c, report(sleepy, a1, 7000, [['status', 'processing']]))).prefix).toBe('restricted')
    expect(tagOf(a2, 'e')).toBe(req.job.event.id)
  })

  it('ends a job past its deadline_ms with the relay\'s error "deadline"', async () => {
    const r = await relays.start(FAST)
    const req = await requestJob(r, 'nobody-offers-this', 'x', [['deadline_ms', '300']])
    expect(req.ok.accepted).toBe(true)
    const terminal = (await req.c.next(isEventOn(req.subId, (e) => tagOf(e, 'code') === 'deadline')))[2] as NostrEvent
    expect(tagOf(terminal, 'generation')).toBe('0')
    expect(tagOf(terminal, 'p')).toBe(req.keys.pubkey)
  })

  it('cancels the job when the requester deletes its request: the assignee is revoked and fenced', async () => {
    const r = await relays.start(FAST)
    const agent = await agentOn(r, 'echo')
    const req = await requestJob(r, 'echo', 'x')
    const a = await nextAssignment(agent)
    const deletion = signEvent(req.keys, {
      kind: 5,
      tags: [
        ['e', req.job.event.id],
        ['k', '5050'],
      ],
      content: '',
    })
    expect((await publish(req.c, deletion)).accepted).toBe(true)
    const revoked = (await agent.c.next(isEventOn(agent.subId, (e) => tagOf(e, 'status') === 'revoked')))[2] as NostrEvent
    expect(tagOf(revoked, 'code')).toBe('cancelled')
    expect((await publish(agent.c, report(agent, a, 6050, [], 'too late'))).prefix).toBe('restricted')
    await eventually(
      () => ended(r, 'cancelled'),
      (n) => n === 1,
      'one job ended cancelled',
    )
  })

  it("refuses a kind 25900 assignment from anyone but the community's key", async () => {
    const r = await relays.start(FAST)
    const agent = await agentOn(r, 'echo')
    const forger = makeKeys()
    const c = await authed(r, forger)
    const fake = signEvent(forger, {
      kind: KIND_JOB_ASSIGNMENT,
      tags: [
        ['e', 'a'.repeat(64)],
        ['p', agent.keys.pubkey],
        ['c', 'echo'],
        ['generation', '1'],
        ['status', 'assigned'],
      ],
      content: '{}',
    })
    const ok = await publish(c, fake)
    expect(ok.prefix).toBe('restricted')
    expect(agent.c.frames.some(isEventOn(agent.subId))).toBe(false)
  })

  it('revokes the assignee of a job whose request an operator bans (NIP-86 banevent), and fences its answers', async () => {
    const operator = makeKeys()
    const r = await relays.start({ ...FAST, operatorPubkeys: [operator.pubkey] })
    const agent = await agentOn(r, 'echo')
    const req = await requestJob(r, 'echo', 'x')
    const a = await nextAssignment(agent)
    const body = rpc('banevent', [req.job.event.id, 'spam'])
    expect((await postNip86(r, body, nip98Header(operator, managementUrl(r), body))).status).toBe(200)
    const revoked = (await agent.c.next(isEventOn(agent.subId, (e) => tagOf(e, 'status') === 'revoked')))[2] as NostrEvent
    expect(tagOf(revoked, 'code')).toBe('cancelled')
    expect((await publish(agent.c, report(agent, a, 6050, [], 'too late'))).prefix).toBe('restricted')
  })

  it('answers "rate-limited:" at jobs.maxQueuedPerCapability + 1 and "invalid:" to a request without one capability', async () => {
    const r = await relays.start({ ...FAST, jobs: { maxQueuedPerCapability: 2 } })
    const keys = makeKeys()
    const c = await authed(r, keys)
    for (let i = 0; i < 2; i++) expect((await publish(c, request(keys, 'idle', `job ${i}`))).accepted).toBe(true)
    expect((await publish(c, request(keys, 'idle', 'one too many'))).prefix).toBe('rate-limited')
    // another capability has a queue of its own
    expect((await publish(c, request(keys, 'other', 'fine'))).accepted).toBe(true)
    const twoCaps = signEvent(keys, { kind: 5050, tags: [['c', 'a'], ['c', 'b'], ['dispatch']], content: '' })
    expect((await publish(c, twoCaps)).prefix).toBe('invalid')
    const badDeadline = request(keys, 'other', 'x', [['deadline_ms', '-5']])
    expect((await publish(c, badDeadline)).prefix).toBe('invalid')
  })

  it('answers "rate-limited:" past jobs.maxOpenPerRequester and past jobs.maxCapabilitiesPerCommunity', async () => {
    const r = await relays.start({ ...FAST, jobs: { maxOpenPerRequester: 2, maxCapabilitiesPerCommunity: 3 } })
    const keys = makeKeys()
    const c = await authed(r, keys)
    for (let i = 0; i < 2; i++) expect((await publish(c, request(keys, `cap-${i}`, 'x'))).accepted).toBe(true)
    expect((await publish(c, request(keys, 'cap-0', 'third'))).prefix).toBe('rate-limited')
    // another requester still gets in, up to the community's third capability, not a fourth
    const other = makeKeys()
    const c2 = await authed(r, other)
    expect((await publish(c2, request(other, 'cap-2', 'x'))).accepted).toBe(true)
    expect((await publish(c2, request(other, 'cap-3', 'x'))).prefix).toBe('rate-limited')
    // a capability that already has open jobs takes more
    expect((await publish(c2, request(other, 'cap-0', 'x'))).accepted).toBe(true)
  })

  it('gives each agent at most its announced concurrency and spreads jobs over agents with room', async () => {
    const r = await relays.start(FAST)
    const wide = await agentOn(r, 'echo', { concurrency: 2 })
    const narrow = await agentOn(r, 'echo')
    for (let i = 0; i < 4; i++) await requestJob(r, 'echo', `job ${i}`)
    await eventually(
      () => labelledMetric(r, 'apiary_job_assignments_total', { attempt: 'first' }),
      (n) => n === 3,
      'three first assignments',
    )
    const count = (a: Agent) => a.c.frames.filter(isEventOn(a.subId, (e) => tagOf(e, 'status') === 'assigned')).length
    expect(count(wide)).toBe(2)
    expect(count(narrow)).toBe(1)
  })

  it("counts an agent's concurrency per capability when its announcement names one", async () => {
    const r = await relays.start(FAST)
    const agent = await agentOn(r, 'narrow', {
      tags: [
        ['c', 'wide'],
        ['concurrency', '1', 'narrow'],
        ['concurrency', '3', 'wide'],
      ],
    })
    for (let i = 0; i < 3; i++) await requestJob(r, 'narrow', `n${i}`)
    for (let i = 0; i < 3; i++) await requestJob(r, 'wide', `w${i}`)
    await eventually(
      () => labelledMetric(r, 'apiary_job_assignments_total', { attempt: 'first' }),
      (n) => n === 4,
      'one narrow and three wide assignments',
    )
    const assigned = agent.c.frames
      .filter(isEventOn(agent.subId, (e) => tagOf(e, 'status') === 'assigned'))
      .map((f) => tagOf(f[2] as NostrEvent, 'c'))
    expect(assigned.filter((c) => c === 'narrow')).toHaveLength(1)
    expect(assigned.filter((c) => c === 'wide')).toHaveLength(3)
  })

  it('keeps a queued job across a restart and assigns it to an agent that connects afterwards', async () => {
    const r = await relays.start(FAST)
    const req = await requestJob(r, 'echo', 'survive')
    expect(req.ok.accepted).toBe(true)
    await r.close({ keepData: true })
    relays.forget(r)
    const again = await relays.start(FAST, r.dataDir)
    const agent = await agentOn(again, 'echo')
    const a = await nextAssignment(agent)
    expect(tagOf(a, 'e')).toBe(req.job.event.id)
    expect(tagOf(a, 'generation')).toBe('1')
  })
})
