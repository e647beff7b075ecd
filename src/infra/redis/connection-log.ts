import type { EventEmitter } from 'node:events'

export interface ConnectionLog {
  warn(o: object, m: string): void
  info(o: object, m: string): void
}

/**
 * Logs a Redis client's connection as state changes, one structured line each: the first error of an outage
 * (later retries failing the same way say nothing), and the recovery. Attach it before the first connect:
 * ioredis prints "[ioredis] Unhandled error event" with a stack for every error of a client without an
 * 'error' listener, once per retry. Returns a function that detaches it.
 */
export function logConnectionState(client: EventEmitter, name: string, log: ConnectionLog): () => void {
  let down: string | undefined
  let everReady = false
  const onError = (error: unknown) => {
    const cause = error instanceof Error ? error.message || String((error as { code?: unknown }).code ?? error.name) : String(error)
    if (down !== undefined) return
    down = cause
    log.warn({ redis: name, cause }, everReady ? 'redis connection lost; reconnecting' : 'redis unreachable; retrying')
  }
  const onReady = () => {
    if (everReady && down === undefined) return
    log.info({ redis: name, after: down }, everReady ? 'redis connection restored' : 'redis connected')
    everReady = true
    down = undefined
  }
  client.on('error', onError)
  client.on('ready', onReady)
  return () => {
    client.off('error', onError)
    client.off('ready', onReady)
  }
}
