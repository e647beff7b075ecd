import type { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSessionDirectory, DirectoryError, parseLease, type SessionDirectory } from '../../../src/infra/mesh/session-directory'
import { sessionGenerationKey, sessionLeaseKey } from '../../../src/infra/redis/keys'
import { eventually } from '../../support/eventually'
import { connectRedis, hex64, testCommunity } from '../redis/connect'

const TTL_MS = 300
let redis: Redis
beforeAll(async () => {
  redis = await connectRedis()
})
afterAll(() => redis.disconnect())

/** Two nodes' directories on one Redis, with a monotonic clock each test controls. */
function twoNodes(ttlMs = TTL_MS) {
  const clock = { t: 1_000 }
  const [a, b] = [hex64(), hex64()]
  const dirA = createSessionDirectory({ redis, runtime: a, leaseTtlMs: ttlMs, now: () => clock.t })
  const dirB = createSessionDirectory({ redis, runtime: b, leaseTtlMs: ttlMs, now: () => clock.t })
  return { a, b, dirA, dirB, clock, community: testCommunity('mesh') }
}

/** Resolves once Redis has dropped the lease (polling Redis itself: the expiry is Redis's, not ours). */
async function leaseGone(community: string, session: string): Promise<void> {
  await eventually(
    () => redis.exists(sessionLeaseKey(community, session)),
    (n) => n === 0,
    `the lease of ${session} dropped by Redis`,
  )
}

describe('mesh session directory (real Redis, short TTL)', () => {
  it('ACQUIRE gives a free session to the first node with generation 1 and refuses the second, naming the holder', async () => {
    const { a, dirA, dirB, community } = twoNodes()
    const first = await dirA.acquire(community, 'channel:general', 'channel')
    expect(first).toEqual({ acquired: true, lease: { owner: a, generation: 1, kind: 'channel' }, validUntilMs: 1_000 + TTL_MS - 5 })
    const second = await dirB.acquire(community, 'channel:general', 'channel')
    expect(second.acquired).toBe(false)
    if (!second.acquired) {
      expect(second.holder).toEqual({ owner: a, generation: 1, kind: 'channel' })
      expect(second.remainingMs).toBeGreaterThan(0)
      expect(second.remainingMs).toBeLessThanOrEqual(TTL_MS)
    }
    expect(await redis.pttl(sessionGenerationKey(community, 'channel:general'))).toBe(-1)
  })

  it('takes over after expiry with a strictly higher generation, and the old owner can no longer renew or release', async () => {
    const { b, dirA, dirB, community } = twoNodes()
    const s = 'channel:takeover'
    const first = await dirA.acquire(community, s, 'channel')
    expect(first.acquired).toBe(true)
    await leaseGone(community, s)
    const second = await dirB.acquire(community, s, 'channel')
    expect(second).toMatchObject({ acquired: true, lease: { owner: b, generation: 2 } })
    expect(await dirA.renew(community, s, 1)).toEqual({ renewed: false, holder: { owner: b, generation: 2, kind: 'channel' } })
    expect(await dirA.release(community, s, 1)).toBe(false)
    expect((await dirA.read(community, s))?.owner).toBe(b)
  })

  it('RENEW extends only the matching owner and generation, and measures validity from when it was sent', async () => {
    const { dirA, dirB, clock, community } = twoNodes(5_000)
    const s = 'channel:renew'
    await dirA.acquire(community, s, 'channel')
    await redis.pexpire(sessionLeaseKey(community, s), 100)
    clock.t = 7_000
    expect(await dirA.renew(community, s, 1)).toEqual({ renewed: true, validUntilMs: 7_000 + 5_000 - 52 })
    expect(await redis.pttl(sessionLeaseKey(community, s))).toBeGreaterThan(4_000)
    expect((await dirB.renew(community, s, 1)).renewed).toBe(false)
    expect((await dirA.renew(community, s, 2)).renewed).toBe(false)
    expect(await dirA.renew(community, 'channel:never-held', 1)).toEqual({ renewed: false, holder: undefined })
  })

  it('RELEASE frees the session at once and the next owner gets a higher generation without waiting for the TTL', async () => {
    const { b, dirA, dirB, community } = twoNodes(60_000)
    const s = 'channel:handover'
    await dirA.acquire(community, s, 'channel')
    expect(await dirB.release(community, s, 1)).toBe(false)
    expect(await dirA.release(community, s, 1)).toBe(true)
    expect(await dirB.acquire(community, s, 'channel')).toMatchObject({ acquired: true, lease: { owner: b, generation: 2 } })
  })

  it('ACQUIRE after a Redis that lost its counters starts above the floor the caller knows from the database', async () => {
    const { a, dirA, community } = twoNodes()
    const s = 'channel:floor'
    expect(await dirA.acquire(community, s, 'channel', 41)).toMatchObject({ acquired: true, lease: { owner: a, generation: 42 } })
    expect(await redis.get(sessionGenerationKey(community, s))).toBe('42')
    await redis.del(sessionLeaseKey(community, s))
    // a floor below the counter changes nothing: generations still only rise
    expect(await dirA.acquire(community, s, 'channel', 3)).toMatchObject({ acquired: true, lease: { generation: 43 } })
  })

  it('VALIDATE names why a frame is refused: stale, future, no lease, owner mismatch', async () => {
    const { a, b, dirA, dirB, community } = twoNodes(60_000)
    const s = 'channel:fence'
    expect(await dirA.validate(community, s, a, 1)).toEqual({ valid: false, reason: 'future', holder: undefined })
    await dirA.acquire(community, s, 'channel')
    expect(await dirB.validate(community, s, a, 1)).toEqual({ valid: true })
    expect(await dirB.validate(community, s, b, 1)).toMatchObject({ valid: false, reason: 'owner-mismatch', holder: { owner: a } })
    expect(await dirB.validate(community, s, a, 2)).toMatchObject({ valid: false, reason: 'future' })
    await dirA.release(community, s, 1)
    expect(await dirB.validate(community, s, a, 1)).toMatchObject({ valid: false, reason: 'no-lease' })
    await dirB.acquire(community, s, 'channel')
    expect(await dirA.validate(community, s, a, 1)).toMatchObject({ valid: false, reason: 'stale', holder: { owner: b, generation: 2 } })
  })

  it('lets exactly one of many concurrent ACQUIREs win', async () => {
    const community = testCommunity('mesh')
    const dirs: SessionDirectory[] = Array.from({ length: 20 }, () =>
      createSessionDirectory({ redis, runtime: hex64(), leaseTtlMs: 60_000 }),
    )
    const outcomes = await Promise.all(dirs.map((d) => d.acquire(community, 'channel:race', 'channel')))
    const winners = outcomes.filter((o) => o.acquired)
    expect(winners).toHaveLength(1)
    const holders = new Set(outcomes.map((o) => (o.acquired ? o.lease.owner : o.holder.owner)))
    expect(holders.size).toBe(1)
  })

  it('rejects with DirectoryError when Redis does not answer', async () => {
    const down = await connectRedis()
    down.disconnect()
    const dir = createSessionDirectory({ redis: down, runtime: hex64(), leaseTtlMs: 1_000 })
    await expect(dir.acquire(testCommunity('mesh'), 'channel:x', 'channel')).rejects.toBeInstanceOf(DirectoryError)
    await expect(dir.renew(testCommunity('mesh'), 'channel:x', 1)).rejects.toMatchObject({ code: 'APIARY_MESH_DIRECTORY_UNAVAILABLE' })
  })

  it('refuses session ids and kinds that could not name a key', async () => {
    const { dirA, community } = twoNodes()
    await expect(dirA.acquire(community, 'channel:UPPER', 'channel')).rejects.toBeInstanceOf(RangeError)
    await expect(dirA.acquire(community, 'room:x', 'channel')).rejects.toBeInstanceOf(RangeError)
    await expect(dirA.acquire(community, 'channel:x', 'ch|annel')).rejects.toBeInstanceOf(RangeError)
  })
})

describe('lease values', () => {
  it.each([
    ['a|1|channel', { owner: 'a', generation: 1, kind: 'channel' }],
    ['a|0|channel', undefined],
    ['a|1.5|channel', undefined],
    ['a|1', undefined],
    ['a|1|channel|x', undefined],
    ['|1|channel', undefined],
  ])('parses %j', (text, want) => {
    expect(parseLease(text)).toEqual(want)
  })
})
