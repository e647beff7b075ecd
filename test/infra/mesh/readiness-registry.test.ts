import { schnorr } from '@noble/curves/secp256k1.js'
import type { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createReadinessRegistry } from '../../../src/infra/mesh/readiness-registry'
import { meshReadyKey } from '../../../src/infra/redis/keys'
import { attestRuntime } from '../../../src/protocols/mesh/attestation'
import { buildReadinessRecord } from '../../../src/protocols/mesh/readiness'
import { toSigningKey } from '../../../src/protocols/nip01/sign'
import { connectRedis } from '../redis/connect'

const newKey = () => toSigningKey(schnorr.utils.randomSecretKey())
const FIELDS = { endpoint: 'ws://127.0.0.1:7778', protocol: 1, capabilities: ['channel'], load: 0, draining: false }

let redis: Redis
beforeAll(async () => {
  redis = await connectRedis()
})
afterAll(() => redis.disconnect())

describe('mesh readiness registry (real Redis)', () => {
  // each test has a relay key of its own: other tests' (and other runs') records are skipped as foreign
  function setup() {
    const relay = newKey()
    const skipped: [string, string][] = []
    const registry = createReadinessRegistry({ redis, anchorRelayPubkey: relay.pubkey, onSkipped: (k, why) => skipped.push([k, why]) })
    const recordOf = (runtime = newKey(), nowMs = Date.now(), fields = FIELDS) =>
      buildReadinessRecord(runtime, relay.pubkey, attestRuntime(relay, runtime.pubkey), fields, nowMs)
    const ours = (key: string) => skipped.filter(([k]) => k === key)
    return { relay, registry, recordOf, skipped, ours }
  }

  it('lists the records of its own relay and skips, with a count, one a foreign relay attested', async () => {
    const { registry, recordOf, ours } = setup()
    const [a, b] = [recordOf(), recordOf()]
    const foreign = setup().recordOf()
    await Promise.all([a, b, foreign].map((r) => registry.publish(r)))
    const listed = await registry.list(Date.now())
    const runtimes = listed.map((r) => r.runtime)
    expect(runtimes).toEqual(expect.arrayContaining([a.runtime, b.runtime]))
    expect(runtimes).not.toContain(foreign.runtime)
    expect(ours(meshReadyKey(foreign.runtime))).toEqual([[meshReadyKey(foreign.runtime), 'invalid: attested by another relay key']])
    await Promise.all([a, b, foreign].map((r) => registry.remove(r.runtime)))
  })

  it('stores each record with a Redis expiry of its lifetime (45 s) and deletes it on a clean shutdown', async () => {
    const { registry, recordOf } = setup()
    const r = recordOf()
    await registry.publish(r)
    const pttl = await redis.pttl(meshReadyKey(r.runtime))
    expect(pttl).toBeGreaterThan(44_000)
    expect(pttl).toBeLessThanOrEqual(45_000)
    await registry.remove(r.runtime)
    expect(await redis.exists(meshReadyKey(r.runtime))).toBe(0)
    expect((await registry.list(Date.now())).map((x) => x.runtime)).not.toContain(r.runtime)
  })

  it('skips malformed text, a copy stored under another runtime id, and an expired record, and still lists the good one', async () => {
    const { registry, recordOf, ours } = setup()
    const good = recordOf()
    const copied = recordOf()
    const stale = recordOf(newKey(), Date.now() - 50_000)
    const junkKey = meshReadyKey(newKey().pubkey)
    const copyKey = meshReadyKey(newKey().pubkey)
    await registry.publish(good)
    await redis.set(junkKey, '{"v":1,', 'PX', 60_000)
    await redis.set(copyKey, JSON.stringify(copied), 'PX', 60_000)
    await redis.set(meshReadyKey(stale.runtime), JSON.stringify(stale), 'PX', 60_000)
    const listed = (await registry.list(Date.now())).map((r) => r.runtime)
    expect(listed).toContain(good.runtime)
    expect(listed).not.toContain(copied.runtime)
    expect(ours(junkKey)).toEqual([[junkKey, 'invalid: not JSON']])
    expect(ours(copyKey)).toEqual([[copyKey, 'invalid: record stored under another runtime id']])
    expect(ours(meshReadyKey(stale.runtime))).toEqual([[meshReadyKey(stale.runtime), 'invalid: expired']])
    await redis.del(junkKey, copyKey, meshReadyKey(stale.runtime), meshReadyKey(good.runtime))
  })
})
