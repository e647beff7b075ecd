// The session directory: who owns each mesh session, decided in Redis by four Lua scripts, so two
// nodes can never both believe a script gave them the same session (a script runs atomically).
//
// Keys (src/infra/redis/keys.ts), both in the community's hash slot:
//   lease       `owner|generation|kind`, with PX = the lease TTL. Present ⇔ someone owns the session.
//   generation  the last generation handed out. Never expires: a generation is never issued twice.
//
// Invariants:
// - ACQUIRE succeeds only when there is no lease, and then takes a generation strictly higher than every one
//   issued before: INCR, raised to `floor + 1` when the caller knows of a higher one. The floor is how a
//   restarted Redis (which keeps nothing on disk here) cannot hand out generation 1 again: the caller passes
//   the highest generation the database has stored for that session, so the new owner still outranks every
//   write already made.
// - RENEW and RELEASE act only when owner AND generation match the lease: an owner that lost its lease (it
//   expired, another node took it) can neither extend nor delete its successor's.
// - Ownership is measured on this node's monotonic clock, never on Redis's TTL alone: the clock is read
//   before the request is sent, so the lease is believed to end at `sentAt + TTL − drift`, earlier than Redis
//   ends it (Redlock's rule, drift = 1 % of the TTL + 2 ms). An owner stops side effects before that moment.
//
// Redis failures reject with DirectoryError; the caller treats a failed RENEW as a lost lease.
import type { RedisClient } from '../redis/connect.js'
import { sessionGenerationKey, sessionLeaseKey } from '../redis/keys.js'

export interface LeaseRecord {
  owner: string
  generation: number
  kind: string
}

export type AcquireOutcome =
  | { acquired: true; lease: LeaseRecord; validUntilMs: number }
  | { acquired: false; holder: LeaseRecord; remainingMs: number }

export type RenewOutcome = { renewed: true; validUntilMs: number } | { renewed: false; holder?: LeaseRecord }

/** Why a session frame or write is refused (apiary_mesh_fence_rejections_total{reason}). */
export type FenceRejection = 'stale' | 'no-lease' | 'future' | 'owner-mismatch'
export type FenceVerdict = { valid: true } | { valid: false; reason: FenceRejection; holder?: LeaseRecord }

export interface SessionDirectory {
  /** Take the session if nobody holds it; `floorGeneration`: the highest generation known to have written. */
  acquire(community: string, session: string, kind: string, floorGeneration?: number): Promise<AcquireOutcome>
  renew(community: string, session: string, generation: number): Promise<RenewOutcome>
  /** Give the session up now (a drain): the next ACQUIRE succeeds at once, under a higher generation. */
  release(community: string, session: string, generation: number): Promise<boolean>
  /** Is `owner` at `generation` the session's owner right now? */
  validate(community: string, session: string, owner: string, generation: number): Promise<FenceVerdict>
  /** The current lease, if any (routing: where to forward). */
  read(community: string, session: string): Promise<LeaseRecord | undefined>
}

export interface SessionDirectoryOptions {
  redis: RedisClient
  /** this node's runtime id: the owner it acquires, renews and releases as */
  runtime: string
  leaseTtlMs: number
  /** monotonic ms (performance.now); injectable for tests */
  now?: () => number
}

export class DirectoryError extends Error {
  readonly code = 'APIARY_MESH_DIRECTORY_UNAVAILABLE'
}

const acquireLua = `
local cur = redis.call('GET', KEYS[1])
if cur then return {0, cur, redis.call('PTTL', KEYS[1])} end
local g = redis.call('INCR', KEYS[2])
local floor = tonumber(ARGV[4])
if g <= floor then
  g = floor + 1
  redis.call('SET', KEYS[2], string.format('%d', g))
end
local v = ARGV[1] .. '|' .. string.format('%d', g) .. '|' .. ARGV[2]
redis.call('SET', KEYS[1], v, 'PX', ARGV[3])
return {1, v, tonumber(ARGV[3])}
`

// ARGV[1] = `owner|generation|`: a prefix match, so the kind never needs parsing here.
const renewLua = `
local cur = redis.call('GET', KEYS[1])
if not cur then return {0, false} end
if string.sub(cur, 1, #ARGV[1]) ~= ARGV[1] then return {0, cur} end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, cur}
`

const releaseLua = `
local cur = redis.call('GET', KEYS[1])
if cur and string.sub(cur, 1, #ARGV[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`

// Order of the checks: a generation never issued (future) and one below the last issued (stale) are decided
// by the counter alone, so they hold even while nobody owns the session.
const validateLua = `
local issued = tonumber(redis.call('GET', KEYS[2]) or '0')
local g = tonumber(ARGV[2])
if g > issued then return {'future', false} end
if g < issued then return {'stale', redis.call('GET', KEYS[1]) or false} end
local cur = redis.call('GET', KEYS[1])
if not cur then return {'no-lease', false} end
if cur:sub(1, #ARGV[1] + 1 + #ARGV[2] + 1) ~= ARGV[1] .. '|' .. ARGV[2] .. '|' then return {'owner-mismatch', cur} end
return {'ok', cur}
`

type Reply = [number | string, string | null, number?]
interface DirectoryClient {
  apiaryMeshAcquire(lease: string, generation: string, owner: string, kind: string, ttlMs: number, floor: number): Promise<Reply>
  apiaryMeshRenew(lease: string, prefix: string, ttlMs: number): Promise<Reply>
  apiaryMeshRelease(lease: string, prefix: string): Promise<number>
  apiaryMeshValidate(lease: string, generation: string, owner: string, generationArg: number): Promise<Reply>
}

export function createSessionDirectory(opts: SessionDirectoryOptions): SessionDirectory {
  const { redis, runtime, leaseTtlMs } = opts
  const now = opts.now ?? (() => performance.now())
  if (!(Number.isInteger(leaseTtlMs) && leaseTtlMs > 0)) throw new RangeError(`leaseTtlMs must be a positive integer: ${leaseTtlMs}`)
  const driftMs = Math.ceil(leaseTtlMs * 0.01) + 2
  // defineCommand falls back from EVALSHA to EVAL on NOSCRIPT, so a restarted Redis is served without action
  redis.defineCommand('apiaryMeshAcquire', { numberOfKeys: 2, lua: acquireLua })
  redis.defineCommand('apiaryMeshRenew', { numberOfKeys: 1, lua: renewLua })
  redis.defineCommand('apiaryMeshRelease', { numberOfKeys: 1, lua: releaseLua })
  redis.defineCommand('apiaryMeshValidate', { numberOfKeys: 2, lua: validateLua })
  const client = redis as unknown as DirectoryClient
  const ownPrefix = (generation: number) => `${runtime}|${generation}|`

  async function call<T>(what: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run()
    } catch (cause) {
      throw new DirectoryError(`session directory ${what}: redis unavailable (${cause instanceof Error ? cause.message : String(cause)})`, {
        cause,
      })
    }
  }

  return {
    async acquire(community, session, kind, floorGeneration = 0) {
      if (kind.includes('|')) throw new RangeError(`a session kind may not contain "|": ${kind}`)
      const lease = sessionLeaseKey(community, session)
      const sentAt = now()
      const [won, value, ms] = await call('acquire', () =>
        client.apiaryMeshAcquire(
          lease,
          sessionGenerationKey(community, session),
          runtime,
          kind,
          leaseTtlMs,
          Math.max(0, Math.floor(floorGeneration)),
        ),
      )
      const record = parseLease(value)
      if (!record) throw new DirectoryError(`session directory acquire: unreadable lease ${JSON.stringify(value)} at ${lease}`)
      if (won === 1) return { acquired: true, lease: record, validUntilMs: sentAt + leaseTtlMs - driftMs }
      return { acquired: false, holder: record, remainingMs: Math.max(0, Number(ms ?? 0)) }
    },
    async renew(community, session, generation) {
      const sentAt = now()
      const [renewed, value] = await call('renew', () =>
        client.apiaryMeshRenew(sessionLeaseKey(community, session), ownPrefix(generation), leaseTtlMs),
      )
      if (renewed === 1) return { renewed: true, validUntilMs: sentAt + leaseTtlMs - driftMs }
      return { renewed: false, holder: parseLease(value) }
    },
    async release(community, session, generation) {
      return (await call('release', () => client.apiaryMeshRelease(sessionLeaseKey(community, session), ownPrefix(generation)))) === 1
    },
    async validate(community, session, owner, generation) {
      const [verdict, value] = await call('validate', () =>
        client.apiaryMeshValidate(sessionLeaseKey(community, session), sessionGenerationKey(community, session), owner, generation),
      )
      if (verdict === 'ok') return { valid: true }
      return { valid: false, reason: verdict as FenceRejection, holder: parseLease(value) }
    },
    async read(community, session) {
      return parseLease(await call('read', () => redis.get(sessionLeaseKey(community, session))))
    },
  }
}

/** `owner|generation|kind` → its parts; undefined for anything else (no lease, or a value we never wrote). */
export function parseLease(value: string | null | undefined | false): LeaseRecord | undefined {
  if (typeof value !== 'string') return undefined
  const parts = value.split('|')
  if (parts.length !== 3) return undefined
  const [owner = '', generationText = '', kind = ''] = parts
  const generation = Number(generationText)
  if (!owner || !kind || !Number.isSafeInteger(generation) || generation < 1) return undefined
  return { owner, generation, kind }
}
