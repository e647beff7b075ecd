// The readiness registry: every mesh node's signed record in Redis, `apiary:mesh:ready:<runtime>`
// with a PX of the record's lifetime, so a node that dies without deleting its record still drops out within
// READINESS_TTL_MS. Readers trust nothing they read: each record is checked (protocols/mesh/readiness.ts)
// and a bad one is skipped with a warning and a count, never believed and never fatal to the listing.
//
// A Redis Cluster spreads these global keys over every master, so a listing scans each master.
import { parseReadinessRecord, type ReadinessRecord } from '../../protocols/mesh/readiness.js'
import { isCluster, type RedisClient } from '../redis/connect.js'
import { MESH_READY_PREFIX, meshReadyKey } from '../redis/keys.js'

export interface ReadinessRegistry {
  /** write (or refresh) this node's record */
  publish(record: ReadinessRecord): Promise<void>
  /** delete a node's record (its own clean shutdown) */
  remove(runtime: string): Promise<void>
  /** every record that passes its checks at `nowMs` (wall clock), ours included */
  list(nowMs: number): Promise<ReadinessRecord[]>
}

export interface ReadinessRegistryOptions {
  redis: RedisClient
  /** the relay pubkey records must be attested by */
  anchorRelayPubkey: string
  /** told once per skipped record, with why (an `invalid:` reason) */
  onSkipped(key: string, why: string): void
}

const SCAN_COUNT = 200

export function createReadinessRegistry(opts: ReadinessRegistryOptions): ReadinessRegistry {
  const { redis, anchorRelayPubkey, onSkipped } = opts

  async function keysOn(node: RedisClient): Promise<string[]> {
    const keys: string[] = []
    let cursor = '0'
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', `${MESH_READY_PREFIX}*`, 'COUNT', SCAN_COUNT)
      keys.push(...batch)
      cursor = next
    } while (cursor !== '0')
    return keys
  }

  return {
    async publish(record) {
      await redis.set(meshReadyKey(record.runtime), JSON.stringify(record), 'PX', Math.max(1, record.expiresAtMs - record.issuedAtMs))
    },
    async remove(runtime) {
      await redis.del(meshReadyKey(runtime))
    },
    async list(nowMs) {
      const nodes: RedisClient[] = isCluster(redis) ? redis.nodes('master') : [redis]
      const keys = [...new Set((await Promise.all(nodes.map(keysOn))).flat())]
      // one GET per key, not MGET: on a cluster the keys live in different slots
      const values = await Promise.all(keys.map((k) => redis.get(k)))
      const records: ReadinessRecord[] = []
      for (const [i, key] of keys.entries()) {
        const text = values[i]
        if (text === null || text === undefined) continue // expired between SCAN and GET
        const parsed = parseReadinessRecord(text, anchorRelayPubkey, nowMs)
        if (!parsed.ok) onSkipped(key, parsed.error)
        else if (meshReadyKey(parsed.value.runtime) !== key) onSkipped(key, 'invalid: record stored under another runtime id')
        else records.push(parsed.value)
      }
      return records
    },
  }
}
