// What every Redis gate backend needs from its ioredis client, and how its failures surface.
//
// A gate sits on the hot path of every EVENT, REQ and upgrade, and callers fail CLOSED on GateError, so
// a Redis outage must turn into GateError within a bounded time instead of parking requests. ioredis by
// default queues commands while disconnected and retries them on reconnect (up to 20 times per command,
// seconds each), which would freeze admission for the whole outage. The client handed to a gate therefore
// needs at least one of:
//   enableOfflineQueue: false  — while disconnected, a command is refused at once (no waiting at all);
//   commandTimeout: <ms>       — a command unanswered after ms is rejected. This is the only bound when the
//                                socket stays open but Redis does not answer (partition, a SIGSTOPped or
//                                overloaded server), so production should set both (e.g. 500 ms).
// With enableOfflineQueue: false, connect first (`lazyConnect: true` then `await redis.connect()`, or wait
// for 'ready'): commands sent before the client is ready are refused too. ioredis keeps reconnecting in the
// background, so the same client serves again once Redis is back and nothing here recreates it, provided
// its retryStrategy never gives up (returning null ends the client for good: "Connection is closed").
//
// A cluster client (ioredis Cluster) needs both: its own offline queue (enableOfflineQueue on the Cluster)
// holds commands while the cluster is not ready with no timeout at all, and each node's connection always
// queues (ioredis forces it), so only commandTimeout (in redisOptions) bounds a command to a node that
// does not answer. createRedisClient (redis/connect.ts) maps one connection's options onto both.
import { isCluster, type RedisClient } from '../redis/connect.js'
import { GateError } from './rate-limit.js'

/** Refuses (RangeError: a wiring bug) a client that would queue gate commands through an outage. */
export function checkFailsFast(redis: RedisClient, who: string): void {
  if (isCluster(redis)) {
    const timeout = redis.options.redisOptions?.commandTimeout
    if (redis.options.enableOfflineQueue !== false || !(typeof timeout === 'number' && timeout > 0)) {
      throw new RangeError(
        `${who}: an ioredis Cluster must set enableOfflineQueue: false and redisOptions.commandTimeout, or an outage would hang admission instead of failing closed`,
      )
    }
    return
  }
  const { enableOfflineQueue, commandTimeout } = redis.options
  const timeoutSet = typeof commandTimeout === 'number' && commandTimeout > 0
  if (enableOfflineQueue !== false && !timeoutSet) {
    throw new RangeError(
      `${who}: the ioredis client must set enableOfflineQueue: false or a commandTimeout, or an outage would hang admission instead of failing closed`,
    )
  }
}

/** Runs one Redis round trip; any failure (error reply, disconnected, timed out) becomes a GateError. */
export async function callRedis<T>(who: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (cause) {
    if (cause instanceof GateError) throw cause
    const message = cause instanceof Error ? cause.message : String(cause)
    throw new GateError(`${who}: redis unavailable (${message})`, { cause })
  }
}
