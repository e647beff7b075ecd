import type { EventEmitter } from 'node:events'

export interface ConnectionLog {
  warn(o: object, m: string): void
  info(o: object, m: string): void
}

const causeOf = (error: unknown): string =>
  error instanceof Error ? error.message || String((error as { code?: unknown }).code ?? error.name) : String(error)

/**
 * Logs a Redis client's connection as state changes, one structured line each: the first error of an outage
 * (later retries failing the same way say nothing), and the recovery. Attach it before the first connect:
 * ioredis prints "[ioredis] Unhandled error event" with a stack for every error of a client without an
 * 'error' listener, once per retry. Returns a function that detaches it.
 *
 * An ioredis Cluster emits 'error' only when no node answers at all; one master going away shows as 'node
 * error' (once per failed attempt, many a second while commands for its slots keep coming). Those are
 * logged per node the same way: the first error, then the node's next 'ready'.
 */
export function logConnectionState(client: EventEmitter, name: string, log: ConnectionLog): () => void {
  let down: string | undefined
  let everReady = false
  const detachNodes = logNodeStates(client, name, log)
  const onError = (error: unknown) => {
    const cause = causeOf(error)
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
    detachNodes()
  }
}

interface NodeConnection extends EventEmitter {
  options: { host?: string; port?: number }
}

/** The cluster part: node keys are `host:port`, as ioredis names them in 'node error'. */
function logNodeStates(client: EventEmitter, name: string, log: ConnectionLog): () => void {
  const down = new Map<string, string>()
  let detached = false
  const watch = (node: NodeConnection) => {
    const key = `${node.options.host}:${node.options.port}`
    // ioredis makes a new connection object whenever it reconnects to a node, so one 'ready' per object
    node.on('ready', () => {
      const after = down.get(key)
      if (detached || after === undefined) return
      down.delete(key)
      log.info({ redis: name, node: key, after }, 'redis cluster node connected again')
    })
  }
  const onNodeError = (error: unknown, key: unknown) => {
    const node = String(key)
    if (down.has(node)) return
    const cause = causeOf(error)
    down.set(node, cause)
    log.warn({ redis: name, node, cause }, 'redis cluster node unreachable; commands for its slots fail')
  }
  const nodes = (client as { nodes?: (role: 'all') => NodeConnection[] }).nodes
  if (typeof nodes === 'function') for (const node of nodes.call(client, 'all')) watch(node)
  client.on('+node', watch)
  client.on('node error', onNodeError)
  return () => {
    detached = true
    client.off('+node', watch)
    client.off('node error', onNodeError)
  }
}
