import type { CommunityStore } from './community-store.js'

type Answer = { reason: string } | undefined

export type BanLookup = (community: string, pubkey: string) => Promise<Answer>

/**
 * Pubkeys per query: bounds one statement's parameter, and a burst of more distinct writers than this in one
 * round trip simply takes several queries at once.
 */
const MAX_PUBKEYS_PER_QUERY = 500

interface Waiting {
  promise: Promise<Answer>
  resolve: (answer: Answer) => void
  reject: (error: unknown) => void
}

/** One community's lookups: those sent (their answers shared) and those waiting for the next query. */
interface CommunityLookups {
  sent: Map<string, Promise<Answer>> | undefined
  queued: Map<string, Waiting>
}

/**
 * The per-write ban check (architecture §8) without one store round trip per event. Per community, one query is
 * in flight at a time (split in chunks when very wide) and carries every pubkey that asked while the previous
 * one was out: a store round trip per round trip, whatever the number of writers (with one query per
 * pubkey, ban lookups would be most of PostgreSQL's transactions under ingest). A lookup for a pubkey
 * already in the query in flight shares its answer; any other waits for the next query, which is sent when
 * the one in flight settles. Nothing is cached after a query settles, so an answer is never older than one
 * round trip: a ban row written now refuses the next write.
 */
export function createBanLookup(store: Pick<CommunityStore, 'bannedAmong'>, nowSeconds: () => number): BanLookup {
  const communities = new Map<string, CommunityLookups>()

  function send(community: string, lookups: CommunityLookups): void {
    const batch = lookups.queued
    lookups.queued = new Map()
    const sent = new Map([...batch].map(([pubkey, w]) => [pubkey, w.promise]))
    lookups.sent = sent
    const pubkeys = [...batch.keys()]
    const now = nowSeconds()
    let outstanding = Math.ceil(pubkeys.length / MAX_PUBKEYS_PER_QUERY)
    for (let i = 0; i < pubkeys.length; i += MAX_PUBKEYS_PER_QUERY) {
      const chunk = pubkeys.slice(i, i + MAX_PUBKEYS_PER_QUERY)
      // an answer is forgotten before it is given: a lookup made once it settled never shares it
      const settle = (answer: (w: Waiting, pubkey: string) => void) => {
        for (const pubkey of chunk) sent.delete(pubkey)
        if (--outstanding === 0) {
          lookups.sent = undefined
          if (lookups.queued.size > 0) send(community, lookups)
          else communities.delete(community)
        }
        for (const pubkey of chunk) answer(batch.get(pubkey)!, pubkey)
      }
      // a store that throws instead of rejecting fails its lookups too, never the microtask or the process
      let query: Promise<Map<string, { reason: string }>>
      try {
        query = store.bannedAmong(community, chunk, now)
      } catch (error) {
        query = Promise.reject(error)
      }
      void query.then(
        (found) => settle((w, pubkey) => w.resolve(found.get(pubkey))),
        (error: unknown) => settle((w) => w.reject(error)),
      )
    }
  }

  return (community, pubkey) => {
    let lookups = communities.get(community)
    if (!lookups) {
      lookups = { sent: undefined, queued: new Map() }
      communities.set(community, lookups)
    }
    const shared = lookups.sent?.get(pubkey) ?? lookups.queued.get(pubkey)?.promise
    if (shared) return shared
    let resolve!: (answer: Answer) => void
    let reject!: (error: unknown) => void
    const promise = new Promise<Answer>((res, rej) => {
      resolve = res
      reject = rej
    })
    const first = lookups.queued.size === 0
    lookups.queued.set(pubkey, { promise, resolve, reject })
    // the lookups of this synchronous run (one actor's drain) leave together, on the next microtask
    if (first && lookups.sent === undefined) {
      const ready = lookups
      queueMicrotask(() => {
        if (ready.sent === undefined && ready.queued.size > 0) send(community, ready)
      })
    }
    return promise
  }
}
