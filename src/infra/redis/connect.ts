// The one place that reads APIARY_REDIS_URL and makes ioredis clients from it (docs/architecture.md §9):
//   redis://[user:password@]host:port[/db]      one Redis (rediss:// for TLS); parsed by ioredis
//   redis+cluster://[user:password@]host:port[,host:port...]
//                                               a Redis Cluster: the seed nodes the client asks for the slot
//                                               map; the credentials hold for every node of the cluster
// Every key is hash-tagged by community (keys.ts), so the gates' multi-key commands and scripts run on one
// node in either mode; the command interface is the same, hence one client type for the rest of the code.
import { Cluster, type ClusterOptions, Redis, type RedisOptions } from 'ioredis'
import { err, ok, type Result } from '../../protocols/result.js'
import { ConfigError } from '../load-config.js'

/** A command client: one Redis or a Redis Cluster; they share ioredis's command interface. */
export type RedisClient = Redis | Cluster

export interface RedisNodeAddress {
  host: string
  port: number
}

export type RedisTarget =
  | { mode: 'single'; url: string }
  | { mode: 'cluster'; seeds: RedisNodeAddress[]; username?: string; password?: string }

export const CLUSTER_SCHEME = 'redis+cluster:'
const SINGLE_SCHEMES = new Set(['redis:', 'rediss:'])
const FORMS = 'redis://host:port[/db], rediss://host:port[/db] or redis+cluster://host:port[,host:port...]'
// `[v6]:port` or `name:port`; a name or address may not hold a delimiter of the URL around it
const SEED = /^(?:\[([0-9a-fA-F:.]+)\]|([^\s[\]/?#@,:]+)):(\d{1,5})$/

/** Checks APIARY_REDIS_URL's form (not whether anything answers there); the error is one line for an operator. */
export function parseRedisUrl(url: string): Result<RedisTarget, string> {
  const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(url)?.[0].toLowerCase()
  if (scheme === CLUSTER_SCHEME) return parseClusterUrl(url.slice(CLUSTER_SCHEME.length))
  if (scheme && SINGLE_SCHEMES.has(scheme)) {
    try {
      const u = new URL(url)
      if (u.hostname !== '' && /^\/?(\d+)?$/.test(u.pathname)) return ok({ mode: 'single', url })
    } catch {
      // the message below says what is accepted
    }
  }
  return err(`not a Redis URL: ${JSON.stringify(redactRedisUrl(url))}; expected ${FORMS}`)
}

function parseClusterUrl(rest: string): Result<RedisTarget, string> {
  const bad = (why: string) => err(`bad redis+cluster URL (${why}); expected redis+cluster://[user:password@]host:port[,host:port...]`)
  if (!rest.startsWith('//')) return bad('no //')
  let authority = rest.slice(2).replace(/\/$/, '')
  // Redis Cluster serves database 0 only, and ioredis takes no options from a query string
  if (/[/?#]/.test(authority)) return bad('a path, query or fragment: Redis Cluster has database 0 only')
  let username: string | undefined
  let password: string | undefined
  const at = authority.lastIndexOf('@')
  if (at >= 0) {
    const userinfo = authority.slice(0, at)
    authority = authority.slice(at + 1)
    const colon = userinfo.indexOf(':')
    try {
      username = decodeURIComponent(colon < 0 ? userinfo : userinfo.slice(0, colon)) || undefined
      password = colon < 0 ? undefined : decodeURIComponent(userinfo.slice(colon + 1)) || undefined
    } catch {
      return bad('a malformed %-escape in user or password')
    }
  }
  const seeds: RedisNodeAddress[] = []
  for (const part of authority.split(',')) {
    const m = SEED.exec(part)
    const port = Number(m?.[3])
    if (!m || port < 1 || port > 65_535) return bad(`seed ${JSON.stringify(part)} is not host:port`)
    seeds.push({ host: m[1] ?? m[2] ?? '', port })
  }
  return ok({ mode: 'cluster', seeds, ...(username && { username }), ...(password && { password }) })
}

/** The URL without its password, for logs and error lines (either form). */
export function redactRedisUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:@/]*:)[^@]*@/i, '$1***@')
}

/** parseRedisUrl for start-up: a malformed URL is a ConfigError, which stops the node with its message. */
export function toRedisTarget(url: string): RedisTarget {
  const parsed = parseRedisUrl(url)
  if (!parsed.ok) throw new ConfigError(`invalid config: redisUrl: ${parsed.error}`)
  return parsed.value
}

/**
 * A command client for `url` (not connected when `options.lazyConnect`). `options` are one connection's
 * ioredis options; for a cluster they are mapped onto ioredis's Cluster:
 * - enableOfflineQueue and lazyConnect act on the cluster client as a whole: with `enableOfflineQueue:
 *   false` a command is refused while the cluster client is not ready. A command for a master that is down
 *   is retried by ioredis (slot refresh, MOVED back to it, CLUSTERDOWN) until commandTimeout or 16
 *   redirections, whichever comes first: about 1 s with the relay's options (relay/backends.ts);
 * - retryStrategy becomes clusterRetryStrategy (reconnecting when no node answers at all). A single node
 *   that went away is not retried on a timer: ioredis reconnects to it when the slot map (refreshed on
 *   MOVED, on a lost connection and every 5 s) still names it;
 * - everything else (commandTimeout, maxRetriesPerRequest, connectTimeout, ...) applies to every node's
 *   connection. ioredis forces an offline queue on each node connection, so commandTimeout is what bounds
 *   a command to a node that accepted the connection but does not answer;
 * - reads go to masters (`scaleReads: 'master'`): a replica may lag, and a rate-limit read is a write anyway.
 */
export function createRedisClient(url: string, options: RedisOptions = {}): RedisClient {
  const target = toRedisTarget(url)
  if (target.mode === 'single') return new Redis(target.url, options)
  return new Cluster(target.seeds, toClusterOptions(target, options))
}

function toClusterOptions(target: Extract<RedisTarget, { mode: 'cluster' }>, options: RedisOptions): ClusterOptions {
  const { enableOfflineQueue, lazyConnect, retryStrategy, ...perNode } = options
  return {
    redisOptions: { ...perNode, username: target.username, password: target.password },
    scaleReads: 'master',
    ...(enableOfflineQueue !== undefined && { enableOfflineQueue }),
    ...(lazyConnect !== undefined && { lazyConnect }),
    ...(retryStrategy && { clusterRetryStrategy: (times: number) => retryStrategy(times) }),
  }
}

/**
 * Makes the plain connections the bus subscribes on: one Redis connection each, to the server for a single
 * Redis, to one node for a cluster. Classic PUBLISH is broadcast to every node of a cluster, so any node
 * hears every channel. Not ioredis's Cluster: its subscriber moves to another node and resubscribes by
 * itself when its node goes (with connection options of its own, ignoring ours), which is exactly what the
 * bus bridge must see and do itself (redis-subscriber.ts). Each call takes the next node: among the nodes the
 * command client `commands` is connected to, else among every node it knows and the seeds, so a bridge
 * reconnecting after its node died lands on a live one. The turn starts at a random node: relay nodes that
 * all took the first one would all lose their live events to the death of that one master.
 */
export function subscriberConnector(url: string, options: RedisOptions, commands?: RedisClient): () => Redis {
  const target = toRedisTarget(url)
  if (target.mode === 'single') return () => new Redis(target.url, options)
  let calls = Math.floor(Math.random() * 1_000)
  const credentials = { username: target.username, password: target.password }
  return () => {
    const known = commands && isCluster(commands) ? commands.nodes('all') : []
    const live = known.filter((n) => n.status === 'ready').map(addressOf)
    const candidates = live.length > 0 ? live : unique([...known.map(addressOf), ...target.seeds])
    const node = candidates[calls++ % candidates.length] ?? target.seeds[0]
    return new Redis({ ...options, ...credentials, ...node })
  }
}

const addressOf = (n: Redis): RedisNodeAddress => ({ host: n.options.host ?? '127.0.0.1', port: n.options.port ?? 6379 })

function unique(nodes: RedisNodeAddress[]): RedisNodeAddress[] {
  const seen = new Map(nodes.map((n) => [`${n.host}:${n.port}`, n]))
  return [...seen.values()]
}

/** Whether `redis` is a cluster client (ioredis's Cluster); its own flag, so a second copy of ioredis agrees. */
export function isCluster(redis: RedisClient): redis is Cluster {
  return redis.isCluster
}
