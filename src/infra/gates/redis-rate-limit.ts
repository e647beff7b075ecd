// Admission for a cluster (DESIGN §6): the GCRA of memory-rate-limit.ts (read its derivation), decided by
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
// The caller passes the full key (src/infra/redis/keys.ts), and the client must fail fast
// (redis-gate-client.ts). Every Redis failure rejects with GateError: callers fail closed.
import type { ChainableCommander } from 'ioredis'
import { isCluster, type RedisClient } from '../redis/connect.js'
import { type Admission, checkRateRule, GateError, neverAdmissibleMs, type RateLimiter, type RateRule } from './rate-limit.js'
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
   * Several decisions in one round trip (a pipeline), in order: the result equals admitting them one after
   * the other, and the same key may appear twice. Keys may belong to different communities (hash slots);
   * on a cluster client that is one pipeline per hash tag, sent at once (a pipeline must stay on one node).
   * Each decision is atomic on its own, not the batch. If any decision fails, the whole call rejects with
   * GateError (earlier ones in the batch may have taken tokens; the caller fails all of them closed).
   */
  admitMany(requests: readonly AdmitRequest[]): Promise<Admission[]>
}

const WHO = 'redis rate limiter'
const COMMAND = 'apiaryGcraAdmit'
const EPOCH_SECONDS = 1_735_689_600 // 2025-01-01T00:00:00Z
const SLACK_MS = 0.001

// KEYS[1] bucket; ARGV intervalMs, burst, cost (cost ≤ burst: never-admissible costs are answered in JS).
// Returns {allowed 0|1, retryAfterMs, repaired 0|1}; Lua numbers come back truncated to integers, so every
// returned number is already whole. `%.17g` stores the TAT so that it reads back as the very same double.
// Exported so a test can run it with TIME stubbed and hold it to the memory backend's exact schedule.
export const gcraLua = `
local key = KEYS[1]
local intervalMs, burst, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local time = redis.call('TIME')
local now = (tonumber(time[1]) - ${EPOCH_SECONDS}) * 1000 + tonumber(time[2]) / 1000
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
  return {0, math.max(1, math.ceil(waitMs - ${SLACK_MS})), repaired}
end
if cost > 0 then
  local aheadMs = debtMs + cost * intervalMs
  redis.call('SET', key, string.format('%.17g', now + aheadMs), 'PX', math.max(1, math.ceil(aheadMs)))
elseif repaired == 1 then
  expireByDebt()
end
return {1, 0, repaired}
`

type GcraArgs = [key: string, intervalMs: number, burst: number, cost: number]
interface GcraClient {
  [COMMAND](...args: GcraArgs): Promise<unknown>
}
interface GcraPipeline {
  [COMMAND](...args: GcraArgs): ChainableCommander
}

export function createRedisRateLimiter(opts: RedisRateLimiterOptions): RedisRateLimiter {
  const { redis, log } = opts
  checkFailsFast(redis, WHO)
  // defineCommand sends EVALSHA and falls back to EVAL on NOSCRIPT, per connection: a restarted Redis
  // (empty script cache) is served again without any action here.
  redis.defineCommand(COMMAND, { numberOfKeys: 1, lua: gcraLua })
  const client = redis as unknown as GcraClient
  let closed = false

  // Validates in the memory backend's order, so misuse and never-admissible costs answer alike everywhere.
  function argsFor(req: AdmitRequest): GcraArgs | Admission {
    const cost = req.cost ?? 1
    checkRateRule(req.rule, cost)
    if (cost > req.rule.burst) return { allowed: false, retryAfterMs: neverAdmissibleMs }
    return [req.key, 1000 / req.rule.ratePerSecond, req.rule.burst, cost]
  }

  function toAdmission(key: string, reply: unknown): Admission {
    if (!Array.isArray(reply) || reply.length !== 3 || !reply.every((n) => typeof n === 'number')) {
      throw new GateError(`${WHO}: unexpected script reply ${JSON.stringify(reply)}`)
    }
    const [allowed, retryAfterMs, repaired] = reply as number[]
    if (repaired === 1) log?.warn({ key }, 'rate-limit key had no expiry; repaired')
    return allowed === 1 ? { allowed: true } : { allowed: false, retryAfterMs: retryAfterMs ?? 1 }
  }

  function checkOpen(): void {
    if (closed) throw new GateError(`${WHO} is closed`)
  }

  return {
    async admit(key, rule, cost = 1) {
      checkOpen()
      const args = argsFor({ key, rule, cost })
      if (!Array.isArray(args)) return args
      return toAdmission(key, await callRedis(WHO, () => client[COMMAND](...args)))
    },

    async admitMany(requests) {
      checkOpen()
      const prepared = requests.map(argsFor)
      const sent = prepared.flatMap((p, i) => (Array.isArray(p) ? [i] : []))
      if (sent.length === 0) return prepared as Admission[]
      const out = prepared.slice()
      const batches = isCluster(redis) ? [...groupBy(sent, (i) => hashTagOf(requests[i]?.key ?? '')).values()] : [sent]
      await Promise.all(
        batches.map(async (batch) => {
          const pipeline = redis.pipeline() as unknown as GcraPipeline & ChainableCommander
          for (const i of batch) pipeline[COMMAND](...(prepared[i] as GcraArgs))
          const replies = await callRedis(WHO, () => pipeline.exec())
          if (!replies || replies.length !== batch.length) throw new GateError(`${WHO}: pipeline was discarded`)
          for (const [j, [error, reply]] of replies.entries()) {
            const i = batch[j] ?? 0
            if (error) throw new GateError(`${WHO}: redis unavailable (${error.message})`, { cause: error })
            out[i] = toAdmission(requests[i]?.key ?? '', reply)
          }
        }),
      )
      return out as Admission[]
    },

    // The client belongs to whoever created it (it is usually shared with other gates): not quit here.
    async close() {
      closed = true
    },
  }
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
