// Concurrent sockets per IP for a cluster (connection-slots.ts): one sorted set per IP (ipOpenKey) holding a
// member per open socket on any node, `<nodeId>:<n>`, scored by the Redis-clock ms at which it stops counting.
// A node refreshes its own members' scores every `refreshMs`, so a crashed node's sockets stop counting
// `ttlMs` after its last refresh, while every socket of a live node keeps counting however long it stays
// open. Taking a slot is one script (drop expired members, count, add) so two nodes can never both take the
// last one; time is Redis TIME, node clocks never enter a decision.
//
// Fail open (connection-slots.ts says why): when Redis fails, this node admits by its own count of the IP's
// sockets. The refresh writes every member this node holds, including those admitted while Redis was away,
// so the cluster count is whole again at the first refresh after Redis returns.
import type { RedisClient } from '../redis/connect.js'
import { ipOpenKey } from '../redis/keys.js'
import { type ConnectionSlots, LocalSlots, toLease } from './connection-slots.js'
import { callRedis, checkFailsFast } from './redis-gate-client.js'

export interface RedisConnectionSlotsOptions {
  redis: RedisClient
  /** unique per process (Backends.nodeId): members of a restarted node never collide with its old ones */
  nodeId: string
  /**
   * How long a socket counts after its node last refreshed it, ms. Default 30 s: three refreshes, so a GC
   * pause or a Redis blip never drops a live socket from the count, while the clients of a crashed node
   * (which reconnect elsewhere within seconds) are counted twice for half a minute at most.
   */
  ttlMs?: number
  /** how often this node rewrites its members' expiry, ms; default ttlMs / 3 */
  refreshMs?: number
  log?: { warn(o: object, m: string): void; info(o: object, m: string): void }
}

const WHO = 'redis connection slots'
const ACQUIRE = 'apiarySlotAcquire'
const REFRESH = 'apiarySlotRefresh'
// Refresh calls in flight at once: thousands of IPs on a node must not queue thousands of scripts at once.
const REFRESH_BATCH = 256

// KEYS[1] the IP's set; ARGV member, limit, ttlMs. Returns 1 when the member was added, 0 when `limit` are open.
const acquireLua = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
local ttl = tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ttl)
return 1
`

// KEYS[1] the IP's set; ARGV ttlMs, then this node's members. Adds those missing on purpose (see the header).
// The key's own expiry follows the latest score, so a set whose nodes all stopped refreshing disappears.
const refreshLua = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], now + ttl, ARGV[i]) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('PEXPIRE', KEYS[1], ttl)
return 1
`

interface SlotClient {
  [ACQUIRE](key: string, member: string, limit: number, ttlMs: number): Promise<unknown>
  [REFRESH](key: string, ttlMs: number, ...members: string[]): Promise<unknown>
}

/** `redis` must fail fast (redis-gate-client.ts): a hung command would hold the upgrade. */
export function createRedisConnectionSlots(opts: RedisConnectionSlotsOptions): ConnectionSlots {
  const { redis, nodeId, log } = opts
  const ttlMs = opts.ttlMs ?? 30_000
  const refreshMs = opts.refreshMs ?? Math.max(1, Math.floor(ttlMs / 3))
  if (!(refreshMs < ttlMs)) throw new RangeError(`refreshMs (${refreshMs}) must be below ttlMs (${ttlMs}), or live sockets expire`)
  checkFailsFast(redis, WHO)
  redis.defineCommand(ACQUIRE, { numberOfKeys: 1, lua: acquireLua })
  redis.defineCommand(REFRESH, { numberOfKeys: 1, lua: refreshLua })
  const client = redis as unknown as SlotClient
  const local = new LocalSlots()
  let next = 0
  let closed = false
  let degraded = false
  let refreshing = false

  const forget = (key: string, members: string[]) => void redis.zrem(key, ...members).catch(() => {})

  function onFailure(error: unknown): void {
    if (degraded) return
    degraded = true
    log?.warn({ err: error }, 'connection count unavailable; admitting by this node’s own count until Redis answers')
  }

  function onSuccess(): void {
    if (!degraded) return
    degraded = false
    log?.info({}, 'connection count available again')
  }

  async function refresh(): Promise<void> {
    if (refreshing || closed) return
    refreshing = true
    try {
      const keys = [...local.entries()].map(([key]) => key)
      for (let i = 0; i < keys.length; i += REFRESH_BATCH) {
        // members read as each script is sent, not before the first batch: a socket released meanwhile must
        // not be written back (its removal went out first, so nothing would remove it again)
        const sent = keys.slice(i, i + REFRESH_BATCH).flatMap((key) => {
          const members = local.members(key)
          return members.length === 0 ? [] : [callRedis(WHO, () => client[REFRESH](key, ttlMs, ...members))]
        })
        await Promise.all(sent)
      }
      if (keys.length > 0) onSuccess()
    } catch (error) {
      onFailure(error)
    } finally {
      refreshing = false
    }
  }

  const timer = setInterval(() => void refresh(), refreshMs)
  timer.unref()

  return {
    async acquire(ip, limit) {
      const key = ipOpenKey(ip)
      if (closed) return undefined
      const member = `${nodeId}:${++next}`
      let admitted: boolean
      try {
        admitted = (await callRedis(WHO, () => client[ACQUIRE](key, member, limit, ttlMs))) === 1
        onSuccess()
      } catch (error) {
        onFailure(error)
        admitted = local.count(key) < limit
        // the script may have run with only its reply lost: don't leave a slot nobody refreshes counting
        if (!admitted) forget(key, [member])
      }
      if (!admitted) return undefined
      local.add(key, member)
      return toLease(() => {
        local.delete(key, member)
        // a removal that fails is harmless: nobody refreshes the member any more, so it expires in ttlMs
        forget(key, [member])
      })
    },

    async close() {
      closed = true
      clearInterval(timer)
      // a graceful stop gives its slots back now rather than in ttlMs (a crash relies on the expiry)
      await Promise.all([...local.entries()].map(([key, members]) => redis.zrem(key, ...members).catch(() => {})))
      local.clear()
    },
  }
}
