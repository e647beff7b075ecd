import type { EventStore, StoredEvent } from '../../../src/infra/store/event-store'
import type { Filter } from '../../../src/protocols/nip01/filter'
import { makeKeys, type SignedEvent, signEvent, type TestKeys } from '../../support/events'

/** What each EventStore contract test sees: its own store and its own community. */
export interface ContractContext {
  store: EventStore
  community: string
  alice: TestKeys
  bob: TestKeys
  save(e: SignedEvent, community?: string): ReturnType<EventStore['save']>
  query(filters: Filter[], community?: string): Promise<StoredEvent[]>
}

/** The contract's clock: queries pass it as `now`, events are dated relative to it. */
export const NOW = 1_700_000_000
export const at = (secondsAgo: number) => NOW - secondsAgo

export const idsOf = (xs: readonly StoredEvent[]) => xs.map((x) => x.event.id)

/**
 * Every path that removes events, on one community `c`: a replaced contact list (40 `p` tags) and article
 * version, NIP-09 deletions by id and by address, and deleteEvents. Resolves with the tag rows each remaining
 * event should have, by id; a backend's test compares that with its own tags table.
 */
export async function removeByEveryPath(store: EventStore, alice: TestKeys): Promise<Map<string, number>> {
  const bob = makeKeys()
  const contacts = (created: number) =>
    signEvent(alice, { kind: 3, created_at: created, tags: Array.from({ length: 40 }, (_, i) => ['p', `${i}`.padStart(64, '0')]) })
  const article = (created: number) =>
    signEvent(alice, {
      kind: 30023,
      created_at: created,
      tags: [
        ['d', 'post'],
        ['t', 'news'],
        ['t', `v${created}`],
      ],
    })
  const newerContacts = contacts(NOW - 90)
  const note = signEvent(alice, {
    kind: 1,
    created_at: NOW - 50,
    tags: [
      ['t', 'note'],
      ['e', 'e'.repeat(64)],
    ],
  })
  const kept = signEvent(bob, {
    kind: 1,
    created_at: NOW - 50,
    tags: [
      ['t', 'note'],
      ['t', 'kept'],
    ],
  })
  const moderated = signEvent(bob, { kind: 1, created_at: NOW - 40, tags: [['t', 'moderated']] })
  for (const e of [contacts(NOW - 100), newerContacts, article(NOW - 80), article(NOW - 70), note, kept, moderated]) {
    await store.save('c', e.event, e.raw)
  }
  const byId = signEvent(alice, { kind: 5, created_at: NOW - 30, tags: [['e', note.event.id]] })
  const byAddress = signEvent(alice, { kind: 5, created_at: NOW - 20, tags: [['a', `30023:${alice.pubkey}:post`]] })
  for (const e of [byId, byAddress]) await store.save('c', e.event, e.raw)
  await store.deleteEvents('c', [moderated.event.id])
  // what is left: the newer contact list (40 p), bob's kept note (2 t), and the two deletions (1 e, 1 a)
  return new Map([
    [newerContacts.event.id, 40],
    [kept.event.id, 2],
    [byId.event.id, 1],
    [byAddress.event.id, 1],
  ])
}
