// Presence for one node: status and expiry per (community, pubkey), expired entries dropped lazily.
import { memoryPresenceKey } from './memory-keys.js'
import { type PresenceStore, toPresenceTtlSeconds } from './presence.js'

export interface MemoryPresenceStoreOptions {
  /** clock in ms; default performance.now() (monotonic) */
  now?: () => number
  /**
   * Most entries held; default 100_000, one per present pubkey (each also holds a connection, so the
   * connection limits bind first). Over it, the least recently refreshed entries are dropped: those pubkeys
   * show offline until their next heartbeat, the cheapest failure presence has.
   */
  maxEntries?: number
}

// An entry is refreshed in place (its key string and object reused) and its status is kept as UTF-8 outside
// the JavaScript heap: every entry lives one heartbeat interval (15 s), so each new copy of a heartbeat's raw
// event, key and entry would outlive a young-generation scavenge and be copied and promoted. With thousands of
// agents heartbeating those copies are most of what a scavenge copies, and its pause grows with what it copies.
interface Entry {
  readonly key: string
  status: Buffer
  expiresAt: number
}

// Entries examined at the front per set: two per set outpaces one insertion per set.
const trimPerSet = 2

export function createMemoryPresenceStore(opts: MemoryPresenceStoreOptions = {}): PresenceStore & { readonly size: number } {
  const now = opts.now ?? (() => performance.now())
  const maxEntries = opts.maxEntries ?? 100_000
  if (!Number.isInteger(maxEntries) || maxEntries < 1) throw new RangeError(`maxEntries must be an integer ≥ 1: ${maxEntries}`)
  // memoryPresenceKey → entry; re-inserted on every set, so the front holds the entries refreshed longest ago.
  const entries = new Map<string, Entry>()
  // memoryPresenceKey → connections holding it. One node has no other node to outlive, so no expiry is needed:
  // a connection that closes always disconnects (the community actor sees every close of this process).
  const holders = new Map<string, number>()

  function live(key: string, t: number): Entry | undefined {
    const e = entries.get(key)
    if (e === undefined || e.expiresAt > t) return e
    entries.delete(key)
    return undefined
  }

  return {
    get size() {
      return entries.size
    },
    async set(community, pubkey, status, ttlSeconds) {
      const key = memoryPresenceKey(community, pubkey)
      const t = now()
      const expiresAt = t + toPresenceTtlSeconds(ttlSeconds) * 1000
      const entry = entries.get(key)
      if (entry !== undefined) entries.delete(key)
      else if (entries.size >= maxEntries) {
        const oldest = entries.keys().next()
        if (!oldest.done) entries.delete(oldest.value)
      }
      let examined = 0
      for (const [k, e] of entries) {
        if (examined++ === trimPerSet || e.expiresAt > t) break
        entries.delete(k)
      }
      if (entry === undefined) {
        entries.set(key, { key, status: Buffer.from(status), expiresAt })
        return
      }
      entry.status = Buffer.from(status)
      entry.expiresAt = expiresAt
      entries.set(entry.key, entry)
    },
    async get(community, pubkeys) {
      const t = now()
      const found = new Map<string, string>()
      for (const p of pubkeys) {
        const e = live(memoryPresenceKey(community, p), t)
        if (e) found.set(p, e.status.toString())
      }
      return found
    },
    async clear(community, pubkey) {
      entries.delete(memoryPresenceKey(community, pubkey))
    },
    async connect(community, pubkey, ttlSeconds) {
      const key = memoryPresenceKey(community, pubkey)
      toPresenceTtlSeconds(ttlSeconds)
      holders.set(key, (holders.get(key) ?? 0) + 1)
    },
    async disconnect(community, pubkey) {
      const key = memoryPresenceKey(community, pubkey)
      const left = (holders.get(key) ?? 0) - 1
      if (left > 0) {
        holders.set(key, left)
        return left
      }
      holders.delete(key)
      entries.delete(key)
      return 0
    },
  }
}
