import type { Redis, RedisOptions } from 'ioredis'
import { BusError } from './bus.js'

/**
 * For the client `connectSubscriber` returns. No retryStrategy: the bus bridge actor's supervisor does the
 * backoff (architecture §4.4), so the kernel sees and reports every outage; an ioredis that reconnected by itself
 * would hide it, and resubscribe behind our back. No offline queue: we only send once the client is ready.
 * Against a Redis Cluster too this is a plain connection, to one node (subscriberConnector, redis/connect.ts):
 * ioredis's Cluster subscriber would do exactly that hidden reconnecting, on options of its own.
 */
export const subscriberConnectionOptions: RedisOptions = {
  lazyConnect: true,
  retryStrategy: () => null,
  enableOfflineQueue: false,
  autoResubscribe: false,
  maxRetriesPerRequest: 0,
}

/** One subscriber connection, ready. It never reconnects: when it drops, onDown fires once and it is over. */
export interface SubscriberSession {
  subscribe(channels: string[]): Promise<void>
  unsubscribe(channels: string[]): Promise<void>
  /** idempotent; onDown does not fire for a close asked for */
  close(): void
}

export interface SubscriberHandlers {
  onMessage(channel: string, raw: string): void
  onDown(error: BusError): void
}

function toBusError(what: string, cause: unknown): BusError {
  if (cause instanceof BusError) return cause
  const detail = cause instanceof Error ? cause.message : String(cause)
  return new BusError('APIARY_BUS_UNAVAILABLE', `redis subscriber: ${what} (${detail})`, { cause })
}

/** Resolves once client is ready, rejects (BusError) if it closes first. */
export function openSubscriber(client: Redis, handlers: SubscriberHandlers): Promise<SubscriberSession> {
  return new Promise((resolve, reject) => {
    let phase: 'opening' | 'open' | 'done' = 'opening'
    let lastError: unknown
    const session: SubscriberSession = {
      subscribe: (channels) => send('subscribe', channels),
      unsubscribe: (channels) => send('unsubscribe', channels),
      close: () => {
        if (phase === 'done') return
        phase = 'done'
        client.disconnect()
      },
    }
    async function send(command: 'subscribe' | 'unsubscribe', channels: string[]): Promise<void> {
      // ioredis's unsubscribe() with no channel unsubscribes from all of them
      if (channels.length === 0) return
      try {
        await client[command](...channels)
      } catch (cause) {
        throw toBusError(`${command} failed`, cause)
      }
    }
    const down = (cause: unknown) => {
      if (phase === 'done') return
      const wasOpen = phase === 'open'
      phase = 'done'
      // also stops a client configured to reconnect by itself: reconnecting is the supervisor's job
      client.disconnect()
      const error = toBusError('connection lost', cause)
      if (wasOpen) handlers.onDown(error)
      else reject(error)
    }
    // ioredis emits error before close; the error only travels along as the cause (supervision reports it)
    client.on('error', (error: unknown) => {
      lastError = error
    })
    client.on('close', () => down(lastError ?? new Error('closed')))
    client.on('end', () => down(lastError ?? new Error('ended')))
    client.on('message', (channel: string, raw: string) => {
      if (phase === 'open') handlers.onMessage(channel, raw)
    })
    const ready = () => {
      if (phase !== 'opening') return
      phase = 'open'
      resolve(session)
    }
    if (client.status === 'ready') ready()
    else if (client.status === 'end' || client.status === 'close') down(new Error(`client is ${client.status}`))
    else {
      client.once('ready', ready)
      if (client.status === 'wait') client.connect().catch(down)
    }
  })
}
