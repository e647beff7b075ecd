import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SaveOutcome } from '../../../src/infra/store/event-store'
import { openPostgresEventStore, type PostgresEventStore } from '../../../src/infra/store/postgres/postgres-event-store'
import { makeKeys, type SignedEvent, signEvent } from '../../support/events'
import { createTestDatabase, type TestDatabase } from '../../support/postgres'
import { idsOf, NOW } from './contract-context'

/**
 * Two nodes on one database (architecture §7): two independent stores, each with its own connection pool and group
 * commit, receive competing writes at the same moment. Only the database can make them agree.
 */

let db: TestDatabase
let nodes: [PostgresEventStore, PostgresEventStore]
beforeAll(async () => {
  db = await createTestDatabase()
  const open = () => openPostgresEventStore({ url: db.url, groupCommitMaxEvents: 16, groupCommitMaxDelayMs: 1 })
  nodes = [await open(), await open()]
})
afterAll(async () => {
  await Promise.all(nodes?.map((n) => n.close()) ?? [])
  await db?.drop()
})

const ROUNDS = 30
const VERSIONS = 6
const alice = makeKeys()

// NIP-01: the newer created_at wins; on a tie the lowest id wins
const winnerOf = (versions: SignedEvent[]) =>
  [...versions].sort((a, b) => b.event.created_at - a.event.created_at || (a.event.id < b.event.id ? -1 : 1))[0]!

/** Random node per write, all writes of a round submitted in the same tick, so both nodes' batches overlap. */
function saveOnBothNodes(community: string, events: SignedEvent[], nodeOf: (i: number) => number) {
  return Promise.all(events.map((e, i) => nodes[nodeOf(i)]!.save(community, e.event, e.raw)))
}

const random = () => (Math.random() < 0.5 ? 0 : 1)

describe('two nodes on one PostgreSQL database', () => {
  it('converge on the single latest version of a replaceable and an addressable event, round after round', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const community = `race-${round}`
      // created_at drawn from three values, so ties (decided by the lowest id) are common
      const version = (kind: number, i: number, tags: string[][] = []) =>
        signEvent(alice, { kind, created_at: NOW - (i % 3), tags, content: `round ${round} version ${i}` })
      const profiles = Array.from({ length: VERSIONS }, (_, i) => version(0, i))
      const articles = Array.from({ length: VERSIONS }, (_, i) => version(30_023, i, [['d', 'post']]))
      // interleaved, so one batch holds both addresses in an order the other node's batch may reverse
      const all = profiles.flatMap((p, i) => [p, articles[i]!])
      const outcomes = await saveOnBothNodes(community, all, random)

      for (const [kind, versions] of [
        [0, profiles],
        [30_023, articles],
      ] as const) {
        const winner = winnerOf(versions)
        for (const node of nodes) {
          expect(idsOf(await node.query(community, [{ kinds: [kind] }], { now: NOW }))).toEqual([winner.event.id])
        }
        // every version but the winner was refused or removed by a later one, on whichever node
        const own = outcomes.filter((_, i) => versions.includes(all[i]!))
        const saved = versions.filter((v) => own[versions.indexOf(v)]!.status === 'saved').map((v) => v.event.id)
        const removed = own.flatMap((o) => (o.status === 'saved' ? o.removedIds : []))
        expect(saved.filter((id) => !removed.includes(id))).toEqual([winner.event.id])
      }
    }
  })

  it('stores a regular event sent to both nodes at once exactly once: one saved, one duplicate', async () => {
    const events = Array.from({ length: ROUNDS }, (_, i) => signEvent(alice, { created_at: NOW, content: `twice ${i}` }))
    const outcomes = await Promise.all(events.map((e) => Promise.all(nodes.map((n) => n.save('duplicates', e.event, e.raw)))))
    for (const pair of outcomes) expect(pair.map((o) => o.status).sort()).toEqual(['duplicate', 'saved'])
    expect(await nodes[0].count('duplicates', [{}], { now: NOW })).toBe(ROUNDS)
  })

  it('never keeps an event whose deletion arrived on the other node at the same moment', async () => {
    const targets = Array.from({ length: ROUNDS }, (_, i) => signEvent(alice, { created_at: NOW - 10, content: `doomed ${i}` }))
    const deletions = targets.map((t) => signEvent(alice, { kind: 5, created_at: NOW, tags: [['e', t.event.id]] }))
    const outcomes = await Promise.all(
      targets.map((t, i) => {
        const [first, second] = random() === 0 ? nodes : [nodes[1], nodes[0]]
        return Promise.all([first.save('deletions', t.event, t.raw), second.save('deletions', deletions[i]!.event, deletions[i]!.raw)])
      }),
    )
    expect(await nodes[1].query('deletions', [{ kinds: [1] }], { now: NOW })).toEqual([])
    for (const [i, [target, deletion]] of outcomes.entries()) {
      // either the deletion found the target and removed it, or the tombstone refused the later arrival
      const removedByDeletion = (deletion as Extract<SaveOutcome, { status: 'saved' }>).removedIds
      if (target.status === 'saved') expect(removedByDeletion).toEqual([targets[i]!.event.id])
      else expect([target.status, removedByDeletion]).toEqual(['deleted', []])
    }
  })
})
