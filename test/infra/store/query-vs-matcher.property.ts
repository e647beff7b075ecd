import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { EventStore } from '../../../src/infra/store/event-store'
import type { NostrEvent } from '../../../src/protocols/nip01/event'
import { type Filter, matchFilter } from '../../../src/protocols/nip01/filter'
import { isExpired } from '../../../src/protocols/nip40'
import { makeKeys, type SignedEvent, signEvent } from '../../support/events'

/**
 * strfry's method: the store must answer exactly what the dumb reference matcher accepts on the same events.
 * Only regular kinds (1..9 without 3 and 5), so every saved event stays stored and the reference is just the matcher.
 * Small alphabets and a narrow time range make overlaps and created_at ties common.
 */

const NOW = 1_000
// 3 is replaceable (NIP-02 follow list) and 5 is a deletion: both would change what stays stored
const KINDS = [1, 2, 4, 6, 7, 8, 9]
const LETTERS = ['e', 'p', 't', 'h']
const VALUES = ['a', 'b', 'c', 'd']
const keys = [makeKeys(), makeKeys(), makeKeys()]

// signing is slow, so random events are drawn from a pool signed once
function buildPool(size: number): SignedEvent[] {
  // mulberry32: a fixed seed keeps the pool's shape the same on every run
  let seed = 7
  const rand = (n: number) => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) % n
  }
  return Array.from({ length: size }, (_, i) => {
    const tags = Array.from({ length: rand(5) }, () => [LETTERS[rand(4)]!, VALUES[rand(4)]!])
    if (rand(6) === 0) tags.push(['expiration', String(NOW - 2 + rand(5))])
    if (rand(8) === 0) tags.push(['multi', 'a'])
    return signEvent(keys[rand(3)]!, { kind: KINDS[rand(KINDS.length)]!, created_at: NOW - rand(6), tags, content: `${i}` })
  })
}

const pool = buildPool(120)

const sublist = <T>(xs: readonly T[], maxLength: number) => fc.subarray([...xs], { maxLength })
// present in `tenths` of the filters: ids and authors rarely, so tag- and kind-driven plans get their share
const sometimes = <T>(arb: fc.Arbitrary<T>, tenths: number) =>
  fc.oneof({ arbitrary: fc.constant(undefined), weight: 10 - tenths }, { arbitrary: arb, weight: tenths })
const filterArb: fc.Arbitrary<Filter> = fc
  .record({
    ids: sometimes(
      sublist(
        pool.map((e) => e.event.id),
        4,
      ),
      2,
    ),
    authors: sometimes(
      sublist(
        keys.map((k) => k.pubkey),
        2,
      ),
      3,
    ),
    kinds: sometimes(sublist(KINDS, 3), 5),
    since: sometimes(fc.integer({ min: NOW - 6, max: NOW }), 3),
    until: sometimes(fc.integer({ min: NOW - 6, max: NOW }), 3),
    // small limits against tens of events, so the limit usually cuts
    limit: sometimes(fc.integer({ min: 0, max: 8 }), 6),
    tags: sometimes(fc.dictionary(fc.constantFrom(...LETTERS), sublist(VALUES, 3), { maxKeys: 2 }), 6),
  })
  .map((f) => Object.fromEntries(Object.entries(f).filter(([, v]) => v !== undefined)) as Filter)

// NIP-01: newest first, ties lowest id first
const newestFirst = (a: NostrEvent, b: NostrEvent) => b.created_at - a.created_at || (a.id < b.id ? -1 : 1)

function reference(events: NostrEvent[], filters: Filter[], now: number): string[] {
  const live = events.filter((e) => !isExpired(e, now))
  const chosen = new Set<string>()
  for (const f of filters) {
    const matched = live.filter((e) => matchFilter(f, e)).sort(newestFirst)
    for (const e of f.limit === undefined ? matched : matched.slice(0, f.limit)) chosen.add(e.id)
  }
  return live
    .filter((e) => chosen.has(e.id))
    .sort(newestFirst)
    .map((e) => e.id)
}

let communities = 0

/** Run by every backend's test file; `numRuns` lets a slower backend run fewer cases. */
export function describeQueryVsMatcher(name: string, open: () => Promise<EventStore>, numRuns: number): void {
  describe(`${name} query against the reference matcher`, () => {
    let store: EventStore
    beforeAll(async () => {
      store = await open()
    })
    afterAll(() => store?.close())

    it("returns exactly the matcher's events, limited to the newest per filter, in NIP-01 order, and counts them", async () => {
      const input = fc.record({
        events: fc.subarray(pool, { minLength: 1 }),
        filters: fc.array(filterArb, { minLength: 1, maxLength: 3 }),
        now: fc.integer({ min: NOW - 2, max: NOW + 3 }),
      })
      await fc.assert(
        fc.asyncProperty(input, async ({ events, filters, now }) => {
          const community = `prop-${++communities}`
          const outcomes = await Promise.all(events.map((e) => store.save(community, e.event, e.raw)))
          expect(outcomes.every((o) => o.status === 'saved')).toBe(true)
          const stored = events.map((e) => e.event)
          const got = await store.query(community, filters, { now })
          expect(got.map((x) => x.event.id)).toEqual(reference(stored, filters, now))
          // NIP-45 as served: each filter counts at most its limit, so a count is the size of the REQ's answer
          expect(await store.count(community, filters, { now })).toBe(reference(stored, filters, now).length)
          const unlimited = filters.map(({ limit: _, ...f }) => f)
          expect(await store.count(community, unlimited, { now })).toBe(reference(stored, unlimited, now).length)
        }),
        { numRuns },
      )
    })
  })
}
