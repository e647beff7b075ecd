import { afterEach, describe, expect, it } from 'vitest'
import { ask, createKernel, type Kernel, type TypedRef } from '../../../src/actors/kernel'
import {
  type AdmissionAnswer,
  type CommunityLimit,
  type IpLimit,
  ipPrincipalActor,
  ipPrincipalPath,
  type PrincipalMsg,
  principalActor,
} from '../../../src/actors/principal/principal-actor'
import { createMemoryRateLimiter } from '../../../src/infra/gates/memory-rate-limit'
import type { RateRule } from '../../../src/infra/gates/rate-limit'
import { countingLimiter } from './counting-limiter'

// Refill of one token per ~17 minutes: nothing refills during a test.
const slow = (burst: number) => ({ ratePerSecond: 0.001, burst })
const ip = '203.0.113.7'

const admitAll = <L extends string>(ref: TypedRef<PrincipalMsg<L>>, limit: L, n: number, rule: RateRule) =>
  Promise.all(
    Array.from({ length: n }, () => ask<PrincipalMsg<L>, AdmissionAnswer>(ref, (reply) => ({ type: 'Admit', limit, rule, reply }), 5000)),
  )

describe('an IP principal (new sockets and NIP-86 calls per IP)', () => {
  let kernel: Kernel | undefined
  afterEach(async () => {
    await kernel?.shutdown()
  })

  it('decides the connection admits of one turn in one gate call and admits exactly the budget', async () => {
    kernel = createKernel()
    const { limiter, calls } = countingLimiter()
    const ref = kernel.spawn(ipPrincipalPath(ip), ipPrincipalActor({ ip, limiter }))
    const answers = await admitAll<IpLimit>(ref, 'conn', 20, slow(3))
    expect(answers.filter((a) => a.allowed)).toHaveLength(3)
    expect(calls).toEqual({ admit: 0, admitMany: 1 })
  })

  it("admits new connections from this node's own buckets once the gate backend fails", async () => {
    kernel = createKernel()
    const { limiter, calls } = countingLimiter({ failAfterCalls: 1 })
    const readFallback = createMemoryRateLimiter({ now: () => 0 })
    const rules = { conn: slow(2), api: slow(2) }
    const ref = kernel.spawn(ipPrincipalPath(ip), ipPrincipalActor({ ip, limiter, readFallback }))
    expect(await admitAll<IpLimit>(ref, 'conn', 1, rules.conn)).toEqual([{ allowed: true }])
    // the gate is down from here on: the node's bucket (full, burst 2) decides, refusals carry their delay
    const answers = await admitAll<IpLimit>(ref, 'conn', 3, rules.conn)
    expect(calls.admitMany).toBe(2)
    expect(answers.slice(0, 2)).toEqual([{ allowed: true }, { allowed: true }])
    expect(answers[2]).toMatchObject({ allowed: false, retryAfterMs: expect.any(Number) })
    // ...and it is the bucket of this IP's connections in that limiter
    const fallbackKey = readFallback.keyOf({ ip, limit: 'conn' })
    expect(await readFallback.admit(fallbackKey, rules.conn)).toMatchObject({ allowed: false })
  })

  it('fails NIP-86 calls from an IP closed when the gate backend fails, fallback or not', async () => {
    kernel = createKernel()
    const { limiter } = countingLimiter({ failing: true })
    const readFallback = createMemoryRateLimiter({ now: () => 0 })
    const ref = kernel.spawn(ipPrincipalPath(ip), ipPrincipalActor({ ip, limiter, readFallback }))
    expect(await admitAll<IpLimit>(ref, 'api', 2, slow(5))).toEqual([
      { allowed: false, unavailable: true },
      { allowed: false, unavailable: true },
    ])
  })

  it('lives at a path no community can take', () => {
    // community ids are [a-z0-9][a-z0-9-]{0,62}: the scope segment of an IP principal matches none
    const scope = ipPrincipalPath(ip).split('/')[1]!
    expect(scope).not.toMatch(/^[a-z0-9][a-z0-9-]{0,62}$/)
  })
})

describe('a community principal while the gate backend fails', () => {
  let kernel: Kernel | undefined
  afterEach(async () => {
    await kernel?.shutdown()
  })

  it("serves reads from this node's buckets but fails EVENTs and NIP-86 calls closed", async () => {
    kernel = createKernel()
    const { limiter } = countingLimiter({ failing: true })
    const readFallback = createMemoryRateLimiter({ now: () => 0 })
    const rules = { events: slow(5), reqs: slow(5), api: slow(5) }
    const ref = kernel.spawn('principal/c/f', principalActor({ community: 'c', principal: 'a'.repeat(64), limiter, readFallback }))
    const [reqs, events, api] = await Promise.all(
      (['reqs', 'events', 'api'] as const).map((limit) =>
        ask<PrincipalMsg<CommunityLimit>, AdmissionAnswer>(ref, (reply) => ({ type: 'Admit', limit, rule: rules[limit], reply }), 5000),
      ),
    )
    expect(reqs).toEqual({ allowed: true })
    expect(events).toEqual({ allowed: false, unavailable: true })
    expect(api).toEqual({ allowed: false, unavailable: true })
  })
})
