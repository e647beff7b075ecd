import { bytesToHex } from '@noble/hashes/utils.js'
import { afterEach, describe, expect, it } from 'vitest'
import { AgentClient, type JobChunk } from '../../src/client/index'
import type { ConfigInput } from '../../src/infra/config'
import { parseMeshStatus } from '../../src/protocols/mesh/status'
import { keysFromHex, makeKeys, signEvent } from '../support/events'
import { eventually } from '../support/eventually'
import { httpGet } from '../support/http'
import { labelledMetric, metric } from '../support/metrics'
import { operatorGetHeader } from '../support/nip86-client'
import type { TestRelay } from '../support/relay'
import { auth, client, publish, relayUrlOf } from '../support/relay-client'
import { useCluster, useRelays } from '../support/relay-fixtures'

/**
 * Dispatched jobs on three nodes with the mesh on (docs/jobs.md#in-a-cluster), in-process instances sharing one
 * Redis and one PostgreSQL: each capability's dispatcher runs on the owner of its session, requesters and agents
 * connect to any node. Played by our AgentClient on both sides.
 */
describe('dispatched jobs across the mesh', () => {
  const relays = useRelays()
  const cluster = useCluster(relays)
  const MESH: ConfigInput = {
    mesh: 'on',
    meshPort: 0,
    meshLeaseTtlMs: 1_500,
    meshLeaseRenewMs: 500,
    jobs: { acceptTimeoutMs: 2_000 },
  }
  const clients: AgentClient[] = []
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.stop().catch(() => {})))
  })

  async function status(r: TestRelay) {
    const auth = operatorGetHeader(keysFromHex(cluster.relaySecretKey), `http://127.0.0.1:${r.port}/mesh/status`)
    const answer = await httpGet(r, '/mesh/status', { Authorization: auth })
    const parsed = parseMeshStatus(JSON.parse(answer.body))
    if (!parsed.ok) throw new Error(parsed.error)
    return parsed.value
  }

  /** n linked nodes; the AgentClient connects to the default community (127.0.0.1), each test to capabilities of its own */
  async function mesh(n: number, extra: ConfigInput = {}) {
    const started = await cluster.nodes(n, { ...MESH, ...extra })
    for (const node of started.nodes) {
      await eventually(
        () => status(node),
        (s) => s.peers.filter((p) => p.connected).length >= n - 1,
        'every node linked to the others',
        { timeoutMs: 15_000, intervalMs: 100 },
      )
    }
    return started.nodes
  }

  async function agentOn(r: TestRelay) {
    const agent = new AgentClient({ relays: [r.url], secretKey: bytesToHex(makeKeys().secretKey), capabilities: [] })
    clients.push(agent)
    return agent
  }

  /** the node that owns capability `name`'s session, as every node's /mesh/status says */
  async function ownerOf(nodes: TestRelay[], name: string) {
    return eventually(
      async () =>
        (await Promise.all(nodes.map(status))).findIndex((s) => s.sessions.some((x) => x.session === `capability:${name}` && x.local)),
      (i) => i >= 0,
      `an owner of capability:${name}`,
      { timeoutMs: 10_000, intervalMs: 100 },
    )
  }

  it('hands a job asked on one node to the agent on another, streams its chunks in order and answers once', async () => {
    const nodes = await mesh(3)
    const worker = await agentOn(nodes[2]!)
    const handled: string[] = []
    worker.serve('shout', async (job, ctx) => {
      handled.push(job.id)
      for (const word of job.input.split(' ')) await ctx.stream(word.toUpperCase())
      return job.input.toUpperCase()
    })
    await worker.start()
    const requester = await agentOn(nodes[0]!)
    await requester.start()

    const call = requester.request('shout', 'hello busy hive', { deadlineMs: 20_000 })
    const chunks: JobChunk[] = []
    const streamed = (async () => {
      for await (const chunk of call.chunks) chunks.push(chunk)
    })()
    const result = await call
    await streamed
    expect(result.content).toBe('HELLO BUSY HIVE')
    expect(result.agent).toBe(worker.pubkey)
    expect(chunks.map((c) => c.data)).toEqual(['HELLO', 'BUSY', 'HIVE'])
    expect(chunks.map((c) => c.seq)).toEqual([0, 1, 2])
    expect(handled).toEqual([call.id])
    expect(await ownerOf(nodes, 'shout')).toBeGreaterThanOrEqual(0)
  })

  it('spreads jobs over agents on every node and finishes each exactly once', async () => {
    const nodes = await mesh(3)
    const done = new Map<string, string[]>()
    for (const node of nodes) {
      const worker = await agentOn(node)
      worker.serve('count', async (job) => {
        done.set(job.id, [...(done.get(job.id) ?? []), worker.pubkey])
        return String(job.input.length)
      })
      await worker.start()
    }
    const requesters = await Promise.all(nodes.map((n) => agentOn(n)))
    await Promise.all(requesters.map((r) => r.start()))
    const calls = Array.from({ length: 30 }, (_, i) => requesters[i % 3]!.request('count', 'x'.repeat(i + 1), { deadlineMs: 30_000 }))
    const results = await Promise.all(calls)
    expect(results.map((r) => r.content)).toEqual(calls.map((_, i) => String(i + 1)))
    for (const call of calls) expect(done.get(call.id)).toHaveLength(1)
    // more than one agent did work: the owner saw the other nodes' agents
    expect(new Set(results.map((r) => r.agent)).size).toBeGreaterThan(1)
  })

  it('goes on when the owner of the capability closes: the next owner reads the queue back and the job is answered', async () => {
    const nodes = await mesh(3)
    // the first request makes the capability's session (queued: no agent anywhere yet)
    const first = await agentOn(nodes[0]!)
    await first.start()
    void first.request('later', 'first', { deadlineMs: 30_000 }).catch(() => {})
    const owner = await ownerOf(nodes, 'later')
    const before = (await status(nodes[owner]!)).sessions.find((s) => s.session === 'capability:later')!
    const ownerNode = nodes[owner]!
    const survivors = nodes.filter((n) => n !== ownerNode)
    const requester = await agentOn(survivors[0]!)
    await requester.start()
    const waiting = requester.request('later', 'wait for me', { deadlineMs: 30_000 })
    await eventually(
      () => metric(survivors[0]!, 'apiary_jobs_queued_total'),
      (n) => n >= 1,
      'the request stored',
    )
    relays.forget(ownerNode)
    await ownerNode.close()
    const worker = await agentOn(survivors[1]!)
    worker.serve('later', (job) => `done: ${job.input}`)
    await worker.start()
    expect((await waiting).content).toBe('done: wait for me')
    const after = (await Promise.all(survivors.map(status))).flatMap((s) => s.sessions).find((s) => s.session === 'capability:later')
    expect(after?.generation).toBeGreaterThan(before.generation)
  })

  it('keeps a running job with its agent on another node when the owner closes: no second generation', async () => {
    const nodes = await mesh(3)
    // a throwaway request on node 0 makes it the owner, before any agent serves the capability
    const first = await agentOn(nodes[0]!)
    await first.start()
    void first.request('long', 'first', { deadlineMs: 30_000 }).catch(() => {})
    expect(await ownerOf(nodes, 'long')).toBe(0)
    const before = (await status(nodes[0]!)).sessions.find((s) => s.session === 'capability:long')!
    let began!: () => void
    const running = new Promise<void>((resolve) => {
      began = resolve
    })
    let finish!: () => void
    const released = new Promise<void>((resolve) => {
      finish = resolve
    })
    const taken: { input: string; generation: number }[] = []
    const worker = await agentOn(nodes[2]!)
    worker.serve('long', async (job, ctx) => {
      taken.push({ input: job.input, generation: job.generation })
      if (job.input === 'first') return 'done'
      began()
      await released
      await ctx.stream('after the takeover')
      return `done: ${job.input}`
    })
    await worker.start()
    const requester = await agentOn(nodes[1]!)
    await requester.start()
    const call = requester.request('long', 'keep me', { deadlineMs: 30_000 })
    const chunks: JobChunk[] = []
    const streamed = (async () => {
      for await (const chunk of call.chunks) chunks.push(chunk)
    })()
    await running
    relays.forget(nodes[0]!)
    await nodes[0]!.close()
    // the next owner asked node 2 which jobs its connections hold before it read its open jobs back
    await eventually(
      async () =>
        (await Promise.all(nodes.slice(1).map(status))).flatMap((s) => s.sessions).find((s) => s.session === 'capability:long' && s.local),
      (s) => s !== undefined && s.generation > before.generation,
      'a next owner of capability:long',
      { timeoutMs: 10_000, intervalMs: 100 },
    )
    finish()
    const result = await call
    await streamed
    expect(result.content).toBe('done: keep me')
    expect(result.event.tags).toContainEqual(['generation', '1'])
    expect(taken.filter((t) => t.input === 'keep me')).toEqual([{ input: 'keep me', generation: 1 }])
    expect(chunks).toEqual([{ data: 'after the takeover', seq: 0, generation: 1 }])
  })

  it('counts the assignments on the owner node only', async () => {
    const nodes = await mesh(2)
    const worker = await agentOn(nodes[1]!)
    worker.serve('echo', (job) => job.input)
    await worker.start()
    const requester = await agentOn(nodes[0]!)
    await requester.start()
    expect((await requester.request('echo', 'one', { deadlineMs: 20_000 })).content).toBe('one')
    const owner = await ownerOf(nodes, 'echo')
    const assigned = await Promise.all(nodes.map((n) => labelledMetric(n, 'apiary_job_assignments_total', { attempt: 'first' })))
    expect(assigned[owner]).toBe(1)
    expect(assigned[1 - owner] ?? 0).toBe(0)
  })

  it("answers 'rate-limited:' on every node once the capability's queue is full on its owner", async () => {
    const nodes = await mesh(2, { jobs: { acceptTimeoutMs: 2_000, maxQueuedPerCapability: 2 } })
    const keys = makeKeys()
    const ask = async (node: TestRelay) => {
      const c = await client(node)
      expect((await auth(c, keys, relayUrlOf(node))).accepted).toBe(true)
      const e = signEvent(keys, { kind: 5050, tags: [['c', 'tight'], ['dispatch'], ['i', `x${Math.random()}`, 'text']], content: '' })
      const ok = await publish(c, e)
      c.close()
      return ok
    }
    // the first request makes node 0 the owner; its queue then holds the bound (nobody serves `tight`)
    for (let i = 0; i < 2; i++) expect((await ask(nodes[0]!)).accepted).toBe(true)
    expect(await ownerOf(nodes, 'tight')).toBe(0)
    expect((await ask(nodes[0]!)).prefix).toBe('rate-limited')
    // node 1 hears the owner's count with its next poll of the agents
    const refused = await eventually(
      () => ask(nodes[1]!),
      (ok) => !ok.accepted,
      'node 1 refuses once it knows the queue is full',
      { timeoutMs: 10_000, intervalMs: 200 },
    )
    expect(refused.prefix).toBe('rate-limited')
  })
})
