import { afterEach, describe, expect, it } from 'vitest'
import type { DispatcherMsg } from '../../../src/actors/jobs/messages'
import { createKernel, type Kernel, type TypedRef, tell } from '../../../src/actors/kernel'
import { type DispatchHost, type OwnerView, spawnCapabilitySession } from '../../../src/actors/mesh/capability-session'
import type { SessionView } from '../../../src/actors/mesh/session-actor'
import type { AcquireOutcome, LeaseRecord, RenewOutcome, SessionDirectory } from '../../../src/infra/mesh/session-directory'
import type { AgentNote } from '../../../src/protocols/mesh/job-frames'
import { waitTurns } from '../kernel/harness'

/**
 * A capability session that owns its lease (docs/mesh.md §9), with one peer whose answers to the owner's poll
 * the test scripts, and a dispatcher that only records what it is told. The directory is a working fake of the
 * interface that grants the lease and never answers a renewal (the lease holds for the test's length).
 */
const ME = 'a'.repeat(64)
const PEER = 'b'.repeat(64)
const JOB = 'c'.repeat(64)
const AGENT = 'd'.repeat(64)

class FakeDirectory implements SessionDirectory {
  acquire(): Promise<AcquireOutcome> {
    return Promise.resolve({ acquired: true, lease: { owner: ME, generation: 3, kind: 'capability' }, validUntilMs: 60_000 })
  }
  renew(): Promise<RenewOutcome> {
    return new Promise(() => {})
  }
  release(): Promise<boolean> {
    return Promise.resolve(true)
  }
  validate(): Promise<never> {
    return Promise.reject(new Error('not used by the capability session'))
  }
  read(): Promise<LeaseRecord | undefined> {
    return Promise.resolve(undefined)
  }
}

let kernel: Kernel
afterEach(async () => {
  await kernel.shutdown()
})

function start(answers: AgentNote[][]) {
  kernel = createKernel()
  const told: DispatcherMsg[] = []
  let view: OwnerView | undefined
  let recorder: TypedRef<DispatcherMsg> | undefined
  const host: DispatchHost = {
    dispatcher: (_capability, owner) => {
      view = owner
      recorder ??= kernel.spawn<DispatcherMsg[], DispatcherMsg>('recorder/dispatcher', {
        kind: 'recorder',
        init: () => told,
        handle: (s, msg) => {
          s.push(msg)
          return s
        },
      })
      return recorder
    },
    stopDispatcher: () => {},
    hasDispatcher: () => recorder !== undefined,
    agents: () => [],
    openCount: () => 0,
  }
  let polls = 0
  const ref = spawnCapabilitySession(kernel, 'c1', 'capability:work', 'work', {
    runtime: ME,
    directory: new FakeDirectory(),
    storedGeneration: () => Promise.resolve(0),
    host: () => host,
    peers: () => [PEER],
    send: (_peer, request) => {
      if (request.op !== 'job-owner') return Promise.reject(new Error('only polls here'))
      const agents = answers[Math.min(polls++, answers.length - 1)]!
      return Promise.resolve({ ok: true, agents })
    },
    fenceRejected: () => {},
    notesDropped: () => {},
    leaseLost: () => {},
    sessions: new Map<string, SessionView>(),
    renewMs: 60_000,
    now: () => 1_000,
    log: { warn: () => {}, info: () => {} },
  })
  return { ref, told, view: () => view, polls: () => polls }
}

const agent = (holds?: AgentNote['holds']): AgentNote => ({ conn: 'c7', pubkey: AGENT, concurrency: 1, ...(holds ? { holds } : {}) })

describe('the capability session on its owner', () => {
  it("starts the dispatcher with what the peer's connections hold, as the peer said in its answer to the poll", async () => {
    const s = start([[agent([{ job: JOB, generation: 2 }])]])
    await waitTurns(() => s.view() !== undefined, 'the dispatcher started')
    const view = s.view()!
    expect(view.remoteHolders()).toEqual(new Map([[JOB, { conn: `@${PEER}/c7`, pubkey: AGENT, generation: 2 }]]))
    expect(view.remoteAgents()).toEqual([{ conn: `@${PEER}/c7`, pubkey: AGENT, concurrency: 1 }])
  })

  it('tells the dispatcher a connection the peer reported before and not now is gone', async () => {
    const s = start([[agent()], [agent()], []])
    await waitTurns(() => s.view() !== undefined, 'the dispatcher started')
    tell(s.ref, { type: 'Poll' })
    await waitTurns(() => s.polls() === 2, 'the second poll')
    expect(s.told.filter((m) => m.type === 'AgentGone')).toEqual([])
    tell(s.ref, { type: 'Poll' })
    await waitTurns(() => s.told.some((m) => m.type === 'AgentGone'), 'the connection gone')
    expect(s.told.filter((m) => m.type === 'AgentGone')).toEqual([{ type: 'AgentGone', conn: `@${PEER}/c7`, why: 'closed' }])
    expect(s.view()!.remoteAgents()).toEqual([])
  })
})
