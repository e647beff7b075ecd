// Redis clients for tests, configured the way the gates require (src/infra/gates/redis-gate-client.ts).
import { randomBytes } from 'node:crypto'
import { Redis, type RedisOptions } from 'ioredis'

/** The shared Redis every normal test uses; tests isolate by community id, never by flushing. */
export const SHARED_REDIS_PORT = 6379

/** A connected, fail-fast client; `extra` overrides (a private server's port, a shorter timeout). */
export async function connectRedis(extra: RedisOptions = {}): Promise<Redis> {
  const redis = new Redis({
    host: '127.0.0.1',
    port: SHARED_REDIS_PORT,
    lazyConnect: true,
    enableOfflineQueue: false,
    commandTimeout: 1000,
    // fault tests restart the server: reconnect quickly rather than on ioredis' backoff (up to 2 s)
    retryStrategy: () => 50,
    ...extra,
  })
  // ioredis prints unhandled 'error' events; the fault tests cause them on purpose
  redis.on('error', () => {})
  await redis.connect()
  return redis
}

/** A community id of the test's own (matches the community id pattern; random so runs never collide). */
export function testCommunity(label = 't'): string {
  return `${label}-${randomBytes(6).toString('hex')}`
}

/** A random 64-hex id (pubkey or event id). */
export function hex64(): string {
  return randomBytes(32).toString('hex')
}
