import { afterEach, describe, expect, it } from 'vitest'
import { SubscriptionIndex } from '../../src/actors/community/subscription-index'
import { dispatcherPath } from '../../src/actors/jobs/dispatcher-actor'
import { JobBoard } from '../../src/actors/jobs/job-board'
import type { DispatcherMsg } from '../../src/actors/jobs/messages'
import { createKernel, type Kernel } from '../../src/actors/kernel'
import { assignmentTemplate, revocationTemplate } from '../../src/protocols/jobs'
import type { JobDeliverRequest } from '../../src/protocols/mesh/job-frames'
import type { MeshJobs } from '../../src/relay/mesh-jobs'
import { createRemoteJobDelivery } from '../../src/relay/remote-job-delivery'
import { settle, waitTurns } from '../actors/kernel/harness'
import { makeKeys, signEvent } from '../support/events'
import { eventually } from '../support/eventually'

/**
 * The owner's side of assignments for agents on other nodes (docs/mesh.md §9), over a mesh the test plays: each
 * `job-deliver` is answered as the test says (taken, not taken, or no answer), and the capability's dispatcher
 * only records what it is told.
 */
const RUNTIME = 'e'.repeat(64)
const relay = makeKeys()
const agent = makeKeys()
const requester = makeKeys()

let kernel: Kernel
afterEach(async () => {
  await kernel.shutdown()
})

function start(answer: (request: JobDeliverRequest, n: number) => Promise<boolean>) {
  kernel = createKernel()
  const told: DispatcherMsg[] = []
  kernel.spawn<DispatcherMsg[], DispatcherMsg>(dispatcherPath('c1', 'work'), {
    kind: 'recorder',
    init: () => told,
    handle: (s, msg) => {
      s.push(msg)
      return s
    },
  })
  const sent: JobDeliverRequest[] = []
  const mesh = {
    deliver: (_runtime: string, request: JobDeliverRequest) => {
      sent.push(request)
      return answer(request, sent.length)
    },
    peers: () => [RUNTIME],
  } as unknown as MeshJobs
  const delivery = createRemoteJobDelivery({
    community: 'c1',
    kernel,
    mesh,
    delivered: () => new JobBoard(),
    index: () => new SubscriptionIndex(),
    log: { warn: () => {} },
  })
  return { delivery, told, sent }
}

const request = signEvent(requester, { kind: 5050, tags: [['c', 'work'], ['dispatch']], content: '' })
const JOB = request.event.id
const assignment = signEvent(
  relay,
  assignmentTemplate({ job: JOB, agent: agent.pubkey, capability: 'work', generation: 1, acceptMs: 3000, requestRaw: request.raw }),
)
const revocation = signEvent(relay, revocationTemplate({ job: JOB, agent: agent.pubkey, generation: 1, code: 'superseded' }))
const conn = `@${RUNTIME}/conn-1`
const unreachable = () => Promise.reject(new Error('the tunnel is cut'))

describe('assignments and revocations for agents on another node', () => {
  it('hands an assignment its connection did not take on at once', async () => {
    const s = start(() => Promise.resolve(false))
    expect(s.delivery.sendElsewhere('work', conn, assignment.event, assignment.raw)).toBe(true)
    await waitTurns(() => s.told.length === 1, 'the dispatcher told')
    expect(s.told).toEqual([{ type: 'Undelivered', job: JOB, conn }])
  })

  it('leaves an assignment no node answered about to its accept deadline: the agent may have it', async () => {
    const s = start(unreachable)
    s.delivery.sendElsewhere('work', conn, assignment.event, assignment.raw)
    await waitTurns(() => s.sent.length === 1, 'the assignment sent')
    await settle()
    expect(s.told).toEqual([])
    expect(s.sent).toHaveLength(1)
  })

  it('sends a revocation no node answered again until one does', async () => {
    const s = start((_request, n) => (n < 3 ? unreachable() : Promise.resolve(true)))
    s.delivery.sendElsewhere('work', conn, revocation.event, revocation.raw)
    await eventually(
      () => s.sent.length,
      (n) => n === 3,
      'the revocation sent a third time',
      { timeoutMs: 5_000, intervalMs: 50 },
    )
    expect(s.sent.map((r) => r.event)).toEqual([revocation.raw, revocation.raw, revocation.raw])
    expect(s.told).toEqual([])
  })
})
