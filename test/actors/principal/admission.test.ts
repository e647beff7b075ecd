import { randomBytes } from 'node:crypto'
import type { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createKernel, type Kernel } from '../../../src/actors/kernel'
import { ipPrincipalPath, principalPath } from '../../../src/actors/principal/principal-actor'
import { createMemoryRateLimiter } from '../../../src/infra/gates/memory-rate-limit'
import { GateError, type RateLimiter } from '../../../src/infra/gates/rate-limit'
import { createRedisRateLimiter } from '../../../src/infra/gates/redis-rate-limit'
import { Tenants } from '../../../src/infra/http/tenants'
import { loadConfig } from '../../../src/infra/load-config'
import { type CommunityRecord, DEFAULT_SETTINGS } from '../../../src/infra/store/community-store'
import { createAdmission } from '../../../src/relay/admission'
import { connectRedis, hex64, testCommunity } from '../../infra/redis/connect'
import { countingLimiter } from './counting-limiter'

// Refill of one token per ~17 minutes: nothing refills during a test.
const slow = (burst: number) => ({ ratePerSecond: 0.001, burst })
const agent = hex64()
const human = hex64()
const config = loadConfig({
  env: {},
  overrides: {
    rateLimits: {
      human: { api: slow(1), events: slow(2) },
      agentStandard: { events: slow(4) },
      agentElevated: { api: slow(3) },
      apiPerIp: slow(2),
      authPerIp: slow(2),
      connectionsPerIp: slow(4),
    },
  },
})
const recordOf = (id: string): CommunityRecord => ({
  id,
  name: id,
  hosts: [`${id}.test`],
  agents: [{ pubkey: agent, tier: 'elevated' }],
  admins: [],
  settings: DEFAULT_SETTINGS,
  kinds: { allowed: [], disallowed: [] },
})
// an address of this test's own (198.18.0.0/15, for benchmarks): the per-IP keys are node-wide, not per community
const testIp = () => {
  const [a, b] = randomBytes(2)
  return `198.18.${a}.${1 + (b! % 254)}`
}

function admissionOn(kernel: Kernel, record: CommunityRecord, limiter: RateLimiter) {
  const readFallback = createMemoryRateLimiter()
  return createAdmission({ kernel, config, tenants: new Tenants([record]), limiter, readFallback })
}

describe('admission through principal actors', () => {
  let kernel: Kernel | undefined
  afterEach(async () => {
    await kernel?.shutdown()
  })

  it("charges an IP's NIP-86 calls to its IP principal, in the limiter's bucket for that IP", async () => {
    kernel = createKernel()
    const { limiter } = countingLimiter()
    const ip = testIp()
    const admission = admissionOn(kernel, recordOf('c'), limiter)
    const answers = [await admission.admitApiIp(ip), await admission.admitApiIp(ip), await admission.admitApiIp(ip)]
    expect(answers.map((a) => a.allowed)).toEqual([true, true, false])
    expect(kernel.exists(ipPrincipalPath(ip))).toBe(true)
    expect(await limiter.admit(limiter.keyOf({ ip, limit: 'api' }), config.rateLimits.apiPerIp)).toMatchObject({ allowed: false })
    // the same actor holds the IP's connection budget, a bucket of its own
    expect(await admission.admitConnection(ip)).toEqual({ allowed: true })
  })

  it("charges a pubkey's NIP-86 calls to its rostered tier's api budget, through its principal in that community", async () => {
    kernel = createKernel()
    const { limiter } = countingLimiter()
    const record = recordOf('c')
    const admission = admissionOn(kernel, record, limiter)
    const answers = await Promise.all(Array.from({ length: 4 }, () => admission.admitApi(record, agent)))
    expect(answers.map((a) => a.allowed)).toEqual([true, true, true, false])
    expect(kernel.exists(principalPath(record.id, agent))).toBe(true)
    expect(await limiter.admit(limiter.keyOf({ community: 'c', principal: agent, limit: 'api' }), slow(3))).toMatchObject({
      allowed: false,
    })
    // a human on the same community gets the human rule (burst 1)
    expect([(await admission.admitApi(record, human)).allowed, (await admission.admitApi(record, human)).allowed]).toEqual([true, false])
  })

  it("charges an attested agent's EVENTs at the agent tier even when a NIP-86 call made its principal first", async () => {
    kernel = createKernel()
    const { limiter } = countingLimiter()
    const admission = admissionOn(kernel, recordOf('c'), limiter)
    // the unrostered pubkey's NIP-86 call spawns its principal (no attestation: the human tier's api budget)
    await admission.admitApi(recordOf('c'), human)
    const burst = config.rateLimits.agentStandard.events.burst
    const answers = await Promise.all(Array.from({ length: burst + 1 }, () => admission.admit(recordOf('c'), human, 'events', true)))
    expect(answers.filter((a) => a.allowed)).toHaveLength(burst)
  })

  it('applies a roster change to the next request of a principal that is already running', async () => {
    kernel = createKernel()
    const { limiter } = countingLimiter()
    const tenants = new Tenants([{ ...recordOf('c'), agents: [] }])
    const admission = createAdmission({ kernel, config, tenants, limiter, readFallback: createMemoryRateLimiter() })
    // unrostered: the human api budget (1)
    expect((await admission.admitApi(recordOf('c'), agent)).allowed).toBe(true)
    expect((await admission.admitApi(recordOf('c'), agent)).allowed).toBe(false)
    // setagenttier elevated, as a reconcile hands it to the tenants: the elevated budget (3) from the next call
    tenants.replace([recordOf('c')])
    expect((await admission.admitApi(recordOf('c'), agent)).allowed).toBe(true)
  })

  it("charges every AUTH to its IP's node-wide auth budget, a bucket of its own beside the IP's others", async () => {
    kernel = createKernel()
    const { limiter } = countingLimiter()
    const ip = testIp()
    const admission = admissionOn(kernel, recordOf('c'), limiter)
    const answers = [await admission.admitAuth(ip), await admission.admitAuth(ip), await admission.admitAuth(ip)]
    expect(answers.map((a) => a.allowed)).toEqual([true, true, false])
    expect(await limiter.admit(limiter.keyOf({ ip, limit: 'auth' }), config.rateLimits.authPerIp)).toMatchObject({ allowed: false })
    expect((await admission.admitApiIp(ip)).allowed).toBe(true)
  })

  it('rejects NIP-86 calls when the gate backend fails (the endpoint answers 503) but still admits sockets and AUTHs', async () => {
    kernel = createKernel()
    const { limiter } = countingLimiter({ failing: true })
    const record = recordOf('c')
    const admission = admissionOn(kernel, record, limiter)
    const ip = testIp()
    await expect(admission.admitApiIp(ip)).rejects.toBeInstanceOf(GateError)
    await expect(admission.admitApi(record, agent)).rejects.toBeInstanceOf(GateError)
    expect(await admission.admitConnection(ip)).toEqual({ allowed: true })
    expect(await admission.admitAuth(ip)).toEqual({ allowed: true })
  })
})

describe('admission through principal actors on Redis', () => {
  let redis: Redis
  let kernel: Kernel | undefined
  const created: string[] = []
  beforeAll(async () => {
    redis = await connectRedis()
  })
  afterEach(async () => {
    await kernel?.shutdown()
  })
  afterAll(async () => {
    if (created.length > 0) await redis.del(...created)
    redis.disconnect()
  })

  it('keeps the Redis key names of every per-IP and per-pubkey budget', async () => {
    kernel = createKernel()
    const community = testCommunity('adm')
    const record = recordOf(community)
    const ip = testIp()
    const admission = admissionOn(kernel, record, createRedisRateLimiter({ redis }))
    const keys = [`apiary:ip:${ip}:conn`, `apiary:ip:${ip}:api`, `apiary:{${community}}:rl:${agent}:api`]
    created.push(...keys)
    expect(await admission.admitConnection(ip)).toEqual({ allowed: true })
    expect(await admission.admitApiIp(ip)).toEqual({ allowed: true })
    expect(await admission.admitApi(record, agent)).toEqual({ allowed: true })
    expect(await Promise.all(keys.map((k) => redis.exists(k)))).toEqual([1, 1, 1])
  })
})
