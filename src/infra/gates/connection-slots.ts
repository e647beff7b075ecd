/**
 * Concurrent sockets per client IP (`limits.maxConnectionsPerIp`): a slot is taken before
 * the WebSocket upgrade and given back when that socket closes. The memory backend counts one node's sockets
 * (the embedded default); the Redis backend (redis-connection-slots.ts) counts the cluster's.
 *
 * `acquire` never rejects on a backend failure: it falls back to this node's own count (fail open). Unlike
 * the rate limits, an unknown count must not refuse everyone for the length of an outage, and what a client
 * gains is bounded (the limit once per node) and short (the count is whole again once the backend is back).
 */
import { memoryIpKey } from './memory-keys.js'

/** One admitted socket's slot. `release` is idempotent: the edge may call it from every path that ends a socket. */
export interface SlotLease {
  release(): void
}

export interface ConnectionSlots {
  /** a slot when fewer than `limit` sockets from `ip` are open; undefined when `limit` are */
  acquire(ip: string, limit: number): Promise<SlotLease | undefined>
  /** stop; a cluster backend gives back the slots this node still holds */
  close(): Promise<void>
}

/**
 * This node's open sockets, by a key for the IP that every spelling of one address shares, each a member id.
 * The memory backend is just this; the Redis backend keeps it to refresh its members and to fall back on.
 */
export class LocalSlots {
  private readonly byKey = new Map<string, Set<string>>()

  count(key: string): number {
    return this.byKey.get(key)?.size ?? 0
  }

  members(key: string): string[] {
    return [...(this.byKey.get(key) ?? [])]
  }

  add(key: string, member: string): void {
    const set = this.byKey.get(key)
    if (set) set.add(member)
    else this.byKey.set(key, new Set([member]))
  }

  delete(key: string, member: string): void {
    const set = this.byKey.get(key)
    if (!set?.delete(member)) return
    if (set.size === 0) this.byKey.delete(key)
  }

  entries(): IterableIterator<[string, Set<string>]> {
    return this.byKey.entries()
  }

  clear(): void {
    this.byKey.clear()
  }
}

/** A lease whose first `release` runs `give` and whose later ones do nothing. */
export function toLease(give: () => void): SlotLease {
  let held = true
  return {
    release() {
      if (!held) return
      held = false
      give()
    },
  }
}

export function createMemoryConnectionSlots(): ConnectionSlots {
  const local = new LocalSlots()
  let next = 0
  let closed = false
  return {
    async acquire(ip, limit) {
      const key = memoryIpKey(ip)
      if (closed || local.count(key) >= limit) return undefined
      const member = String(++next)
      local.add(key, member)
      return toLease(() => local.delete(key, member))
    },
    async close() {
      closed = true
      local.clear()
    },
  }
}
