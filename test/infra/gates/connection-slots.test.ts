import { randomBytes } from 'node:crypto'
import type { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ConnectionSlots, createMemoryConnectionSlots, type SlotLease } from '../../../src/infra/gates/connection-slots'
import { createRedisConnectionSlots } from '../../../src/infra/gates/redis-connection-slots'
import { ipOpenKey } from '../../../src/infra/redis/keys'
import { eventually } from '../../support/eventually'
import { type PrivateRedis, startPrivateRedis } from '../../support/redis-server'
import { connectRedis } from '../redis/connect'

/** An address of the test's own (2001:db8::/32, documentation), so its Redis key is too. */
const testIp = () => `2001:db8:${randomBytes(6).toString('hex').match(/.{4}/g)!.join(':')}::1`
const node = () => `node-${randomBytes(4).toString('hex')}`

async function takeAll(slots: ConnectionSlots, ip: string, limit: number, n: number): Promise<(SlotLease | undefined)[]> {
  const out: (SlotLease | undefined)[] = []
  for (let i = 0; i < n; i++) out.push(await slots.acquire(ip, limit))
  return out
}

let redis: Redis
let otherNode: Redis
beforeAll(async () => {
  redis = await connectRedis()
  otherNode = await connectRedis()
})
afterAll(() => {
  redis.disconnect()
  otherNode.disconnect()
})

function describeSlotsContract(name: string, make: () => ConnectionSlots): void {
  describe(`${name} connection slots (contract)`, () => {
    it('admits up to the limit and refuses the one past it', async () => {
      const slots = make()
      const leases = await takeAll(slots, testIp(), 3, 4)
      expect(leases.map((l) => l !== undefined)).toEqual([true, true, true, false])
      await slots.close()
    })

    it('frees a slot on release, once however often release is called', async () => {
      const slots = make()
      const ip = testIp()
      const [a, b] = await takeAll(slots, ip, 2, 2)
      expect(await slots.acquire(ip, 2)).toBeUndefined()
      a?.release()
      a?.release()
      const c = await slots.acquire(ip, 2)
      expect(c).toBeDefined()
      expect(await slots.acquire(ip, 2)).toBeUndefined()
      b?.release()
      c?.release()
      await slots.close()
    })

    it('counts each address apart, and every spelling of one address together', async () => {
      const slots = make()
      const [one, other] = [testIp(), testIp()]
      expect(await slots.acquire(one, 1)).toBeDefined()
      expect(await slots.acquire(other, 1)).toBeDefined()
      expect(await slots.acquire(one.toUpperCase(), 1)).toBeUndefined()
      const v4 = `198.51.${randomBytes(1)[0]}.${randomBytes(1)[0]}`
      expect(await slots.acquire(v4, 1)).toBeDefined()
      expect(await slots.acquire(`::ffff:${v4}`, 1)).toBeUndefined()
      await slots.close()
    })
  })
}

describeSlotsContract('memory', () => createMemoryConnectionSlots())
describeSlotsContract('redis', () => createRedisConnectionSlots({ redis, nodeId: node() }))

describe('redis connection slots across nodes', () => {
  it('shares one count between two nodes: a slot taken on one is missing on the other until released', async () => {
    const [a, b] = [createRedisConnectionSlots({ redis, nodeId: node() }), createRedisConnectionSlots({ redis: otherNode, nodeId: node() })]
    const ip = testIp()
    const onA = await a.acquire(ip, 2)
    expect(await b.acquire(ip, 2)).toBeDefined()
    expect(await a.acquire(ip, 2)).toBeUndefined()
    expect(await b.acquire(ip, 2)).toBeUndefined()
    onA?.release()
    expect(await b.acquire(ip, 2)).toBeDefined()
    await Promise.all([a.close(), b.close()])
    expect(await redis.exists(ipOpenKey(ip))).toBe(0)
  })

  it('keeps a live node’s sockets counted past the TTL (its refresh), and drops a crashed node’s after it', async () => {
    const crashing = await connectRedis()
    const ttlMs = 600
    const live = createRedisConnectionSlots({ redis, nodeId: node(), ttlMs, refreshMs: 150 })
    const doomed = createRedisConnectionSlots({ redis: crashing, nodeId: node(), ttlMs, refreshMs: 150 })
    const ip = testIp()
    expect(await live.acquire(ip, 2)).toBeDefined()
    expect(await doomed.acquire(ip, 2)).toBeDefined()
    crashing.disconnect() // the node is gone without a word: no release, no more refreshes
    // the crashed node's socket stops counting a TTL after its last refresh; the live one's, acquired before it,
    // is by then past its own first TTL and must still count
    await eventually(
      () => redis.zcard(ipOpenKey(ip)),
      (open) => open < 2,
      "the crashed node's socket expired",
      { timeoutMs: ttlMs * 4 },
    )
    expect(await redis.zcard(ipOpenKey(ip))).toBe(1)
    expect(await live.acquire(ip, 2)).toBeDefined()
    expect(await live.acquire(ip, 2)).toBeUndefined()
    await live.close()
    await doomed.close()
  })

  it('gives a closing node’s slots back at once', async () => {
    const a = createRedisConnectionSlots({ redis, nodeId: node() })
    const ip = testIp()
    await takeAll(a, ip, 5, 3)
    expect(await redis.zcard(ipOpenKey(ip))).toBe(3)
    await a.close()
    expect(await redis.zcard(ipOpenKey(ip))).toBe(0)
  })

  it('keeps the set’s own expiry no longer than the TTL, so an abandoned set disappears', async () => {
    const a = createRedisConnectionSlots({ redis, nodeId: node(), ttlMs: 5_000 })
    const ip = testIp()
    await a.acquire(ip, 5)
    const pttl = await redis.pttl(ipOpenKey(ip))
    expect(pttl).toBeGreaterThan(0)
    expect(pttl).toBeLessThanOrEqual(5_000)
    await a.close()
  })
})

describe('redis connection slots while Redis is down', () => {
  let server: PrivateRedis
  let privateRedis: Redis
  beforeAll(async () => {
    server = await startPrivateRedis()
    privateRedis = await connectRedis({ port: server.port, commandTimeout: 500 })
  })
  afterAll(async () => {
    privateRedis.disconnect()
    await server.stop()
  })

  it('admits by this node’s own count (fail open), and writes those sockets back once Redis returns', async () => {
    const slots = createRedisConnectionSlots({ redis: privateRedis, nodeId: node(), ttlMs: 900, refreshMs: 300 })
    const ip = testIp()
    const before = await slots.acquire(ip, 3)
    expect(before).toBeDefined()
    await server.kill()
    const during = await takeAll(slots, ip, 3, 3)
    expect(during.map((l) => l !== undefined)).toEqual([true, true, false])
    await server.restart() // empty: the slot taken before the outage is gone with it
    await eventually(
      () => privateRedis.zcard(ipOpenKey(ip)),
      (open) => open >= 3,
      'the three sockets written back',
      { timeoutMs: 5_000, intervalMs: 100 },
    )
    expect(await privateRedis.zcard(ipOpenKey(ip))).toBe(3)
    expect(await slots.acquire(ip, 3)).toBeUndefined()
    during[0]?.release()
    expect(await slots.acquire(ip, 3)).toBeDefined()
    await slots.close()
  })
})
