import { afterEach, describe, expect, it } from 'vitest'
import { ask, createKernel, type Kernel } from '../../../src/actors/kernel'
import { type AdmissionAnswer, type PrincipalMsg, principalActor } from '../../../src/actors/principal/principal-actor'
import type { RateLimiter } from '../../../src/infra/gates/rate-limit'
import { countingLimiter } from './counting-limiter'

const rules = {
  events: { ratePerSecond: 0.001, burst: 10 },
  reqs: { ratePerSecond: 0.001, burst: 10 },
  api: { ratePerSecond: 0.001, burst: 10 },
}
const pubkey = 'a'.repeat(64)

describe('principal admission', () => {
  let kernel: Kernel | undefined
  afterEach(async () => {
    await kernel?.shutdown()
  })

  it('decides concurrent requests in one gate call and admits exactly the budget', async () => {
    kernel = createKernel()
    const { limiter, calls } = countingLimiter()
    const ref = kernel.spawn('principal/c/p', principalActor({ community: 'c', principal: pubkey, limiter }))
    const answers = await Promise.all(
      Array.from({ length: 50 }, () =>
        ask<PrincipalMsg, AdmissionAnswer>(ref, (reply) => ({ type: 'Admit', limit: 'events', rule: rules.events, reply }), 5000),
      ),
    )
    expect(answers.filter((a) => a.allowed)).toHaveLength(10)
    expect(calls.admitMany).toBe(1)
    expect(calls.admit).toBe(0)
  })

  it('fails every waiting request closed when the gate backend fails', async () => {
    kernel = createKernel()
    const { limiter } = countingLimiter({ failing: true })
    const ref = kernel.spawn('principal/c/q', principalActor({ community: 'c', principal: pubkey, limiter }))
    const answers = await Promise.all(
      Array.from({ length: 5 }, () =>
        ask<PrincipalMsg, AdmissionAnswer>(ref, (reply) => ({ type: 'Admit', limit: 'reqs', rule: rules.reqs, reply }), 5000),
      ),
    )
    expect(answers).toEqual(Array.from({ length: 5 }, () => ({ allowed: false, unavailable: true })))
  })

  it('does not wait on a stalled gate call: the next requests are decided while it hangs', async () => {
    kernel = createKernel()
    const { limiter: inner } = countingLimiter()
    // the first call never answers (a Redis that stopped mid-command); every later one does
    let calls = 0
    const limiter: RateLimiter = {
      keyOf: (budget) => inner.keyOf(budget),
      admit: (key, rule, cost) => inner.admit(key, rule, cost),
      admitMany: (requests) => (calls++ === 0 ? new Promise(() => {}) : inner.admitMany!(requests)),
      close: () => inner.close(),
    }
    const ref = kernel.spawn('principal/c/s', principalActor({ community: 'c', principal: pubkey, limiter }))
    const admit = () =>
      ask<PrincipalMsg, AdmissionAnswer>(ref, (reply) => ({ type: 'Admit', limit: 'events', rule: rules.events, reply }), 5000)
    const stalled = admit()
    await new Promise((r) => setImmediate(r))
    expect(calls).toBe(1)
    expect(await admit()).toEqual({ allowed: true })
    let settled = false
    // it is failed when the kernel shuts down after the test: that answer is not this test's
    stalled.then(
      () => (settled = true),
      () => (settled = true),
    )
    await new Promise((r) => setImmediate(r))
    expect(settled).toBe(false)
  })
})
