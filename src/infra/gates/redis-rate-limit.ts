// Admission for a cluster (architecture §8): the GCRA of memory-rate-limit.ts (read its derivation), decided by
// one Lua script inside Redis, so every node draws on one budget per key and two nodes can never both take
// the last token (a script runs atomically). Time is Redis `TIME`: node clocks never enter a decision.
//
// Deliberate differences from the memory backend, and why:
// - TATs are absolute ms on the Redis host's clock counted from 2025-01-01 (not 1970): doubles near 3e10
//   resolve ~4e-6 ms where epoch ms (1.7e12) would only resolve ~2.4e-4 ms, the size of our slack.
// - The slack is 1 µs (TIME's own resolution) instead of 1 ns.
// - The key always carries an expiry (PX) equal to when its bucket is full again, so Redis memory is bounded
//   by the live keys, as the memory backend's trimming bounds its map. A key found without an expiry (a
//   PERSIST, a restore, an older build) is repaired in the same script and reported, since it would
//   otherwise live forever.
//
// Callers pass the key keyOf gave them (its names are src/infra/redis/keys.ts's), and the client must fail fast
// (redis-gate-client.ts). Every Redis failure rejects with GateError: callers fail closed.
import { isCluster, type RedisClient } from '../redis/connect.js'
import { ipApiKey, ipAuthKey, ipConnKey, rateLimitKey } from '../redis/keys.js'
import { type Admission, type Budget, checkRateRule, GateError, neverAdmissibleMs, type RateLimiter, type RateRule } from './rate-limit.js'
import { callRedis, checkFailsFast } from './redis-gate-client.js'

export interface RedisRateLimiterOptions {
  redis: RedisClient
  log?: { warn(o: object, m: string): void }
}

export interface AdmitRequest {
  key: string
  rule: RateRule
  cost?: number
}

export interface RedisRateLimiter extends RateLimiter {
  /**
   * Several decisions, in order: the result equals admitting them one after the other, and the same key may
   * appear twice. Like every admit of the same turn they share script calls (MAX_KEYS_PER_CALL); keys may
   * belong to different communities (hash slots): on a cluster client that is one call per hash tag, sent at
   * once (a script's keys must share a slot). If any decision fails, the whole call rejects with GateError
   * (others may have taken tokens; the caller fails all of them closed).
   */
  admitMany(requests: readonly AdmitRequest[]): Promise<Admission[]>
}

const WHO = 'redis rate limiter'
const COMMAND = 'apiaryGcraAdmit'
const EPOCH_SECONDS = 1_735_689_600 // 2025-01-01T00:00:00Z
const SLACK_MS = 0.001

// KEYS[i] a bucket; ARGV[3i-2..3i] its intervalMs, burst, cost (cost ≤ burst: never-admissible costs are
// answered in JS). One call decides every key it is given, in order, at one Redis TIME (so the same key twice
// is decided twice, the second seeing the first's take). Returns {allowed 0|1, retryAfterMs, repaired 0|1}
// per key, flattened; Lua numbers come back truncated to integers, so every returned number is already whole.
// `%.17g` stores the TAT so that it reads back as the very same double.
// Exported so a test can run it with TIME stubbed and hold it to the memory backend's exact schedule.
export const gcraLua = `
local time = redis.call('TIME')
local now = (tonumber(time[1]) - ${EPOCH_SECONDS}) * 1000 + tonumber(time[2]) / 1000
local function admit(key, intervalMs, burst, cost)
  local raw = redis.call('GET', key)
  local repaired = 0
  if raw and redis.call('PTTL', key) == -1 then repaired = 1 end
  local stored = tonumber(raw or '')
  local debtMs = 0
  if stored and stored > now then debtMs = stored - now end
  local function expireByDebt()
    if debtMs > 0 then redis.call('PEXPIRE', key, math.ceil(debtMs)) else redis.call('DEL', key) end
  end
  local waitMs = debtMs + cost * intervalMs - burst * intervalMs
  if waitMs > ${SLACK_MS} then
    if repaired == 1 then expireByDebt() end
    return 0, math.max(1, math.ceil(waitMs - ${SLACK_MS})), repaired
  end
  if cost > 0 then
    local aheadMs = debtMs + cost * intervalMs
    redis.call('SET', key, string.format('%.17g', now + aheadMs), 'PX', math.max(1, math.ceil(aheadMs)))
  elseif repaired == 1 then
    expireByDebt()
  end
  return 1, 0, repaired
end
local out = {}
for i, key in ipairs(KEYS) do
  local allowed, retryAfterMs, repaired = admit(key, tonumber(ARGV[3 * i - 2]), tonumber(ARGV[3 * i - 1]), tonumber(ARGV[3 * i]))
  out[3 * i - 2], out[3 * i - 1], out[3 * i] = allowed, retryAfterMs, repaired
end
return out
`

/**
 * Decisions asked for in one turn of the event loop go to Redis together: one script call per hash tag
 * (a script's keys must share a slot on a cluster), at most this many keys each. A script blocks Redis for
 * every client while it runs, longer the more keys it carries, and a Lua error in one key (a key of another
 * type) ends the call for all of its keys. Under ingest that is one call for dozens of events instead of one
 * each.
 */
const MAX_KEYS_PER_CALL = 128

type GcraArgs = [key: string, intervalMs: number, burst: number, cost: number]
interface GcraClient {
  [COMMAND](keys: number, ...keysThenArgs: (string | number)[]): Promise<unknown>
}
type Queued = { args: GcraArgs; resolve: (a: Admission) => void; reject: (e: unknown) => void }

export function createRedisRateLimiter(opts: RedisRateLimiterOptions): RedisRateLimiter {
  const { redis, log } = opts
  checkFailsFast(redis, WHO)
  // defineCommand sends EVALSHA and falls back to EVAL on NOSCRIPT, per connection: a restarted Redis
  // (empty script cache) is served again without any action here. No numberOfKeys: each call says how many.
  redis.defineCommand(COMMAND, { lua: gcraLua })
  const client = redis as unknown as GcraClient
  let closed = false
  let queued: Queued[] = []
  let flushScheduled = false

  // Validates in the memory backend's order, so misuse and never-admissible costs answer alike everywhere.
  function argsFor(req: AdmitRequest): GcraArgs | Admission {
    const cost = req.cost ?? 1
    checkRateRule(req.rule, cost)
    if (cost > req.rule.burst) return { allowed: false, retryAfterMs: neverAdmissibleMs }
    return [req.key, 1000 / req.rule.ratePerSecond, req.rule.burst, cost]
  }

  function toAdmission(key: string, allowed: unknown, retryAfterMs: unknown, repaired: unknown): Admission {
    if (typeof allowed !== 'number' || typeof retryAfterMs !== 'number' || typeof repaired !== 'number') {
      throw new GateError(`${WHO}: unexpected script reply ${JSON.stringify([allowed, retryAfterMs, repaired])}`)
    }
    if (repaired === 1) log?.warn({ key }, 'rate-limit key had no expiry; repaired')
    return allowed === 1 ? { allowed: true } : { allowed: false, retryAfterMs: retryAfterMs || 1 }
  }

  function enqueue(args: GcraArgs): Promise<Admission> {
    return new Promise<Admission>((resolve, reject) => {
      queued.push({ args, resolve, reject })
      if (flushScheduled) return
      flushScheduled = true
      setImmediate(flush)
    })
  }

  function flush(): void {
    flushScheduled = false
    const batch = queued
    queued = []
    // the same key always has one tag, so its decisions stay in one call, in order
    const groups = isCluster(redis) ? groupBy(batch, (q) => hashTagOf(q.args[0])).values() : [batch]
    for (const group of groups) {
      for (let i = 0; i < group.length; i += MAX_KEYS_PER_CALL) void send(group.slice(i, i + MAX_KEYS_PER_CALL))
    }
  }

  /** One script call; every decision in it answers, or all of them reject with GateError. */
  async function send(part: Queued[]): Promise<void> {
    try {
      const keys = part.map((q) => q.args[0])
      const argv = part.flatMap((q) => [q.args[1], q.args[2], q.args[3]])
      const reply = await callRedis(WHO, () => client[COMMAND](part.length, ...keys, ...argv))
      if (!Array.isArray(reply) || reply.length !== 3 * part.length) {
        throw new GateError(
          `${WHO}: unexpected script reply of ${Array.isArray(reply) ? reply.length : typeof reply} for ${part.length} keys`,
        )
      }
      const admissions = part.map((q, j) => toAdmission(q.args[0], reply[3 * j], reply[3 * j + 1], reply[3 * j + 2]))
      for (const [j, q] of part.entries()) q.resolve(admissions[j]!)
    } catch (error) {
      for (const q of part) q.reject(error)
    }
  }

  function checkOpen(): void {
    if (closed) throw new GateError(`${WHO} is closed`)
  }

  return {
    keyOf: redisBudgetKey,

    async admit(key, rule, cost = 1) {
      checkOpen()
      const args = argsFor({ key, rule, cost })
      return Array.isArray(args) ? enqueue(args) : args
    },

    async admitMany(requests) {
      checkOpen()
      // every request is checked before any is queued: a misuse takes no token and leaves nothing in flight
      const prepared = requests.map(argsFor)
      return Promise.all(prepared.map((args) => (Array.isArray(args) ? enqueue(args) : args)))
    },

    // The client belongs to whoever created it (it is usually shared with other gates): not quit here.
    async close() {
      closed = true
    },
  }
}

/** `apiary:{c}:rl:<principal>:<limit>`, or a global per-IP key (`apiary:ip:<ip>:conn|api|auth`): keys.ts. */
function redisBudgetKey(budget: Budget): string {
  if (!('ip' in budget)) return rateLimitKey(budget.community, budget.principal, budget.limit)
  if (budget.limit === 'conn') return ipConnKey(budget.ip)
  return budget.limit === 'api' ? ipApiKey(budget.ip) : ipAuthKey(budget.ip)
}

// Redis Cluster's rule for the part of a key that picks its slot: the text inside the first `{...}` when that
// is not empty, else the whole key. Keys with equal tags share a slot; the same key always has one tag, so its
// decisions stay in one pipeline, in order.
function hashTagOf(key: string): string {
  const open = key.indexOf('{')
  const close = open < 0 ? -1 : key.indexOf('}', open + 1)
  return close > open + 1 ? key.slice(open + 1, close) : key
}

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>()
  for (const item of items) {
    const key = keyOf(item)
    const group = groups.get(key)
    if (group) group.push(item)
    else groups.set(key, [item])
  }
  return groups
}
