// The agent registry's wire format (docs/agent-registry.md): NIP-89 kind 31990 capability announcements,
// served only while their author's presence lease is live, and the relay-signed kind 21990 departure that
// tells live subscribers an agent left. Pure: the lease itself lives in the presence store.
import type { Filter } from './nip01/filter.js'
import type { EventTemplate } from './nip01/sign.js'

/** NIP-89 handler information: an agent's capabilities (addressable, `d` = ANNOUNCEMENT_D) */
export const KIND_ANNOUNCEMENT = 31_990
/** ephemeral: an agent's lease ended (`status` expired) or it said goodbye (`status` offline); never stored */
export const KIND_DEPARTURE = 21_990
/** the `d` tag of an Apiary agent's announcement, agreed with the agent client */
export const ANNOUNCEMENT_D = 'apiary-agent'
/** a presence heartbeat (kind 20001) with this content is the agent client's goodbye */
export const BYE_STATUS = 'offline'

export type DepartureStatus = 'expired' | 'offline'

/** May one of these filters match a kind 31990 event? (no `kinds` matches every kind) */
export const canMatchAnnouncements = (filters: readonly Pick<Filter, 'kinds'>[]): boolean =>
  filters.some((f) => f.kinds === undefined || f.kinds.includes(KIND_ANNOUNCEMENT))

/** The filters narrowed to announcements only: what of a COUNT's answer depends on leases. */
export const announcementFiltersOf = (filters: readonly Filter[]): Filter[] =>
  filters.filter((f) => f.kinds === undefined || f.kinds.includes(KIND_ANNOUNCEMENT)).map((f) => ({ ...f, kinds: [KIND_ANNOUNCEMENT] }))

/** The departure the relay signs for `agent`: `p` the agent, `a` its announcement's address, `status` why. */
export function departureTemplate(agent: string, status: DepartureStatus): EventTemplate {
  return {
    kind: KIND_DEPARTURE,
    tags: [
      ['p', agent],
      ['a', `${KIND_ANNOUNCEMENT}:${agent}:${ANNOUNCEMENT_D}`],
      ['status', status],
    ],
    content: '',
  }
}
