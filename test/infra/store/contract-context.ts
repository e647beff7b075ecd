import type { EventStore, StoredEvent } from '../../../src/infra/store/event-store'
import type { Filter } from '../../../src/protocols/nip01/filter'
import type { SignedEvent, TestKeys } from '../../support/events'

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
