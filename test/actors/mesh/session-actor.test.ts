import { afterEach, describe, expect, it } from 'vitest'
import { createKernel, type Kernel, tell } from '../../../src/actors/kernel'
import type { OwnerSinks } from '../../../src/actors/mesh/channel-owner'
import {
  type LeaseLoss,
  type SessionAnswer,
  type SessionDeps,
  type SessionView,
  spawnSession,
} from '../../../src/actors/mesh/session-actor'
import type { AcquireOutcome, FenceRejection, LeaseRecord, RenewOutcome, SessionDirectory } from '../../../src/infra/mesh/session-directory'
import { NO_AUTH } from '../../../src/protocols/mesh/session-frames'
import { asVerified } from '../../../src/protocols/nip01/event'
import { makeKeys, signEvent } from '../../support/events'
import { waitTurns } from '../kernel/harness'

/**
 * One channel session's owner on a clock the test moves: what it does once its lease runs out while it holds
 * work (a SIGSTOP, a long pause). The directory is a working fake of the interface whose renewals the test
 * answers; nothing here reaches a store, because an owner without a held lease starts no work.
 */
const ME = 'a'.repeat(64)
const SUCCESSOR: LeaseRecord = { owner: 'b'.repeat(64), generation: 8, kind: 'channel' }
const TTL_MS = 6_000

class FakeDirectory implements SessionDirectory {
  readonly renewals: { answer: (o: RenewOutcome | Error) => void }[] = []
  acquire(): Promise<AcquireOutcome> {
    return Promise.resolve({ acquired: true, lease: { owner: ME, generation: 7, kind: 'channel' }, validUntilMs: clock.ms + TTL_MS })
  }
  renew(): Promise<RenewOutcome> {
    return new Promise((resolve, reject) => this.renewals.push({ answer: (o) => (o instanceof Error ? reject(o) : resolve(o)) }))
  }
  release(): Promise<boolean> {
    return Promise.resolve(true)
  }
  validate(): Promise<never> {
    return Promise.reject(new Error('not used by the session actor'))
  }
  read(): Promise<LeaseRecord | undefined> {
    return Promise.resolve(undefined)
  }
}

const clock = { ms: 1_000 }
let kernel: Kernel
afterEach(async () => {
  await kernel.shutdown()
})

function start() {
  kernel = createKernel()
  const directory = new FakeDirectory()
  const fence: FenceRejection[] = []
  const lost: LeaseLoss[] = []
  const sessions = new Map<string, SessionView>()
  const deps: SessionDeps = {
    runtime: ME,
    directory,
    storedGeneration: () => Promise.resolve(0),
    sinks: {} as OwnerSinks, // never reached: no work starts without a held lease
    forward: () => Promise.reject(new Error('no peers here')),
    deliver: () => {},
    fenceRejected: (why) => fence.push(why),
    leaseLost: (why) => lost.push(why),
    sessions,
    renewMs: 5,
    workDeadlineMs: 60_000,
    now: () => clock.ms,
    log: { warn: () => {}, info: () => {} },
  }
  const ref = spawnSession(kernel, 'c1', 'channel:hive', 'hive', deps)
  const keys = makeKeys()
  const answers: SessionAnswer[] = []
  const moderate = (remote?: { generation: number; owner: string }) => {
    const e = signEvent(keys, { kind: 9000, tags: [['h', 'hive']] })
    tell(ref, {
      type: 'Moderate',
      event: asVerified(e.event),
      raw: e.raw,
      auth: NO_AUTH,
      reply: (a) => answers.push(a),
      ...(remote ? { remote } : {}),
    })
  }
  const owned = () => waitTurns(() => sessions.get('c1/channel:hive')?.local === true, 'the session owned here')
  return { directory, fence, lost, sessions, answers, moderate, owned }
}

describe('a channel session owner whose lease ran out while it held work', () => {
  it('starts none of it, and when the directory refuses its renewal stops, refuses the work and counts each refusal and the lost lease', async () => {
    const s = start()
    await s.owned()
    clock.ms += TTL_MS + 2_000 // asleep past its lease (SIGSTOP): the renewal in flight comes back too late
    s.moderate()
    s.moderate()
    s.moderate({ generation: 7, owner: ME }) // a peer's frame for the generation it held
    await waitTurns(() => s.directory.renewals.length > 0, 'a renewal')
    expect(s.answers).toEqual([{ refused: 'no-lease' }])
    expect(s.fence).toEqual(['no-lease'])
    s.directory.renewals[0]!.answer({ renewed: false, holder: SUCCESSOR })
    await waitTurns(() => s.answers.length === 3, 'the queued work answered')
    expect(s.lost).toEqual(['renewal-refused'])
    expect(s.fence).toEqual(['no-lease', 'stale', 'stale'])
    for (const a of s.answers.slice(1))
      expect(a).toMatchObject({ outcome: { accepted: false, message: expect.stringMatching(/^error: /) } })
    await waitTurns(() => !s.sessions.has('c1/channel:hive'), 'the session view gone')
  })

  it('stops as superseded when a peer names a newer generation, and as renewal-failed when the directory cannot answer', async () => {
    const s = start()
    await s.owned()
    s.moderate({ generation: 9, owner: SUCCESSOR.owner })
    await waitTurns(() => s.lost.length === 1, 'the lease given up')
    expect(s.lost).toEqual(['superseded'])
    expect(s.fence).toEqual(['future'])
    expect(s.answers[0]).toMatchObject({ refused: 'future' })
    await kernel.shutdown()

    const t = start()
    await t.owned()
    await waitTurns(() => t.directory.renewals.length > 0, 'a renewal')
    t.directory.renewals[0]!.answer(new Error('redis unavailable'))
    await waitTurns(() => t.lost.length === 1, 'the lease given up')
    expect(t.lost).toEqual(['renewal-failed'])
    expect(t.fence).toEqual([])
  })

  it('counts no lost lease while its renewals succeed', async () => {
    const s = start()
    await s.owned()
    for (let i = 0; i < 3; i++) {
      await waitTurns(() => s.directory.renewals.length > i, 'a renewal')
      s.directory.renewals[i]!.answer({ renewed: true, validUntilMs: clock.ms + TTL_MS })
    }
    expect(s.lost).toEqual([])
    expect(s.sessions.get('c1/channel:hive')).toMatchObject({ generation: 7, owner: ME, local: true })
  })
})
