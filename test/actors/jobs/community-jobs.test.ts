import { describe, expect, it } from 'vitest'
import { createCommunityJobs, type DispatchRoute } from '../../../src/actors/jobs/community-jobs'
import { JobBoard } from '../../../src/actors/jobs/job-board'
import type { DispatcherNote } from '../../../src/actors/jobs/messages'
import type { Kernel } from '../../../src/actors/kernel'
import { createMetrics } from '../../../src/infra/metrics'
import { KIND_JOB_CHUNK } from '../../../src/protocols/jobs'
import { makeKeys, signEvent } from '../../support/events'

/**
 * A community's side of dispatch with the mesh on (docs/jobs.md#in-a-cluster), its route to the capability's
 * session played by the test: what it notes, and the jobs another node's dispatcher delivered here.
 */
function start() {
  const time = { wall: 1_700_000_000_000 }
  const noted: { capability: string; note: DispatcherNote }[] = []
  const route: DispatchRoute = {
    note: (capability, note) => noted.push({ capability, note }),
    delivered: new JobBoard(),
    relayChunk: () => {},
    afterChunks: (then) => then(),
    openAt: () => 0,
  }
  const jobs = createCommunityJobs({
    community: 'c',
    kernel: { getOrSpawn: () => undefined } as unknown as Pick<Kernel, 'getOrSpawn'>,
    store: { openCapabilities: async () => [], job: async () => undefined },
    board: new JobBoard(),
    route,
    dispatcherOf: () => {
      throw new Error('no dispatcher runs on this node')
    },
    maxQueuedPerCapability: 100,
    maxCapabilities: 10,
    maxOpenPerRequester: 100,
    maxRequestBytes: 65_536,
    maxDeadlineMs: 3_600_000,
    wallMs: () => time.wall,
    metrics: createMetrics(),
    log: { warn: () => {} },
  })
  return { jobs, route, noted, time }
}

const requester = makeKeys()
const agent = makeKeys()
const JOB = 'ab'.repeat(32)
const chunk = (generation: number, seq = 0) =>
  signEvent(agent, {
    kind: KIND_JOB_CHUNK,
    tags: [
      ['e', JOB],
      ['p', requester.pubkey],
      ['generation', String(generation)],
      ['seq', String(seq)],
    ],
    content: 'part',
  }).event

describe("a community's jobs with the mesh", () => {
  it("keeps a job delivered to a connection that went held for its agent's key a while: its chunks pass as its result would", () => {
    const d = start()
    d.route.delivered.add(JOB, 'echo', requester.pubkey)
    d.route.delivered.hold(JOB, { conn: 'conn-1', pubkey: agent.pubkey, generation: 1 })
    d.jobs.agentGone('conn-1', 'closed')
    expect(d.noted).toEqual([{ capability: 'echo', note: { type: 'AgentGone', conn: 'conn-1', why: 'closed' } }])
    // its agent, reconnected, streams on: the chunk passes as its result would pass the store's fence
    expect(d.jobs.refuseChunk(chunk(1))).toBeUndefined()
    expect(d.jobs.refuseChunk(chunk(2))).toMatch(/^restricted:/)
    // a while later another connection goes: what the first left behind is dropped then
    d.time.wall += 31_000
    d.jobs.agentGone('conn-2', 'lapsed')
    expect(d.route.delivered.holderOf(JOB)).toBeUndefined()
    expect(d.jobs.refuseChunk(chunk(1))).toMatch(/^restricted:/)
  })

  it('drops what a connection that went left behind no sooner than 30 s after', () => {
    const d = start()
    d.route.delivered.add(JOB, 'echo', requester.pubkey)
    d.route.delivered.hold(JOB, { conn: 'conn-1', pubkey: agent.pubkey, generation: 1 })
    d.jobs.agentGone('conn-1', 'closed')
    d.time.wall += 29_000
    d.jobs.agentGone('conn-2', 'closed')
    expect(d.route.delivered.holderOf(JOB)).toMatchObject({ conn: 'conn-1', generation: 1 })
  })
})
