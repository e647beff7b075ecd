import { afterEach, describe, expect, it } from 'vitest'
import { createKernel, type Kernel } from '../../../src/actors/kernel'
import { openSupervisedVerifier, VERIFIER_PATH } from '../../../src/actors/node/verifier-actor'
import { type Verifier, VerifierError, type VerifyVerdict } from '../../../src/infra/verify/verifier'
import { createVerifierPool } from '../../../src/infra/verify/verifier-pool'
import { makeKeys, signEvent } from '../../support/events'
import { eventually } from '../../support/eventually'
import { type EventLog, recordEvents } from '../kernel/harness'
import { ManualClock } from '../kernel/manual-clock'

/**
 * The node's verifier actor on the real kernel with a clock the test moves. The pool that gives up is a
 * working fake of the pool's interface (a real pool gives up only when its threads cannot start at all); the
 * pools that replace it are real worker pools.
 */
class GivingUpPool implements Verifier {
  readonly threads = 1
  closed = false
  private unavailable: VerifierError | undefined
  constructor(private readonly onUnavailable: (error: VerifierError) => void) {}
  verify(): Promise<VerifyVerdict> {
    return this.unavailable ? Promise.reject(this.unavailable) : Promise.resolve('ok')
  }
  async close(): Promise<void> {
    this.closed = true
  }
  /** what the pool does after maxStartFailures failed worker starts in a row */
  giveUp(): void {
    this.unavailable = new VerifierError('APIARY_VERIFIER_UNAVAILABLE', 'verifier workers keep failing to start')
    this.onUnavailable(this.unavailable)
  }
}

let kernel: Kernel
let clock: ManualClock
let events: EventLog
const opened: Verifier[] = []
afterEach(async () => {
  await Promise.all(opened.splice(0).map((v) => v.close()))
  await kernel.shutdown()
})

function start() {
  clock = new ManualClock()
  kernel = createKernel({ clock, random: () => 0 })
  events = recordEvents(kernel)
}

// polled on the real clock, not in event-loop turns: a real pool takes a while to start its workers
const until = (done: () => boolean, what: string) => eventually(done, what, { timeoutMs: 15_000, intervalMs: 5 })

const keys = makeKeys()
const good = signEvent(keys, { content: 'verified again' }).event
const forged = { ...signEvent(keys, { content: 'forged' }).event, sig: good.sig }

describe('the verifier pool under the node supervisor', () => {
  it('replaces a pool that gave up with a new one after backoff, which verifies again', async () => {
    start()
    const fakes: GivingUpPool[] = []
    const verifier = await openSupervisedVerifier(kernel, async (onUnavailable) => {
      if (fakes.length === 0) {
        fakes.push(new GivingUpPool(onUnavailable))
        return fakes[0]!
      }
      return createVerifierPool({ threads: 1, onUnavailable })
    })
    opened.push(verifier)
    fakes[0]!.giveUp()
    await expect(verifier.verify(good)).rejects.toMatchObject({ code: 'APIARY_VERIFIER_UNAVAILABLE' })
    await until(() => events.of('backoff', VERIFIER_PATH).length === 1, 'a backoff')
    expect(events.of('crashed', VERIFIER_PATH)[0]).toMatchObject({ supervisor: 'root/node/verifier', msgType: 'GaveUp' })
    expect(events.of('backoff', VERIFIER_PATH)[0]).toMatchObject({ delayMs: 1000, attempt: 1 })
    expect(kernel.unhealthy()).toEqual([VERIFIER_PATH])

    clock.advance(1000)
    await until(() => fakes[0]!.closed, 'the old pool closed')
    expect(await verifier.verify(good)).toBe('ok')
    expect(await verifier.verify(forged)).toBe('bad-sig')
    expect(kernel.unhealthy()).toEqual([])
  })

  it('backs off further while replacements fail to start, and keeps the last pool until one does', async () => {
    start()
    let starts = 0
    let first: GivingUpPool | undefined
    const verifier = await openSupervisedVerifier(kernel, async (onUnavailable) => {
      starts++
      if (starts === 1) {
        first = new GivingUpPool(onUnavailable)
        return first
      }
      if (starts < 4) throw new VerifierError('APIARY_VERIFIER_UNAVAILABLE', 'verifier worker failed to start')
      return createVerifierPool({ threads: 1, onUnavailable })
    })
    opened.push(verifier)
    first!.giveUp()
    for (let attempt = 1; attempt <= 3; attempt++) {
      await until(() => events.of('backoff', VERIFIER_PATH).length === attempt, `backoff ${attempt}`)
      clock.advance(events.of('backoff', VERIFIER_PATH).at(-1)!.delayMs)
    }
    await until(() => first!.closed, 'the first pool closed')
    expect(events.of('backoff', VERIFIER_PATH).map((e) => e.delayMs)).toEqual([1000, 2000, 4000])
    expect(starts).toBe(4)
    expect(await verifier.verify(good)).toBe('ok')
  })

  it('starts nothing more once closed', async () => {
    start()
    let starts = 0
    let pool: GivingUpPool | undefined
    const verifier = await openSupervisedVerifier(kernel, async (onUnavailable) => {
      starts++
      pool = new GivingUpPool(onUnavailable)
      return pool
    })
    await verifier.close()
    pool!.giveUp()
    clock.advance(60_000)
    await new Promise((r) => setTimeout(r, 20))
    expect(starts).toBe(1)
    expect(events.of('stopped', VERIFIER_PATH)).toHaveLength(1)
  })
})
