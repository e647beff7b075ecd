// What the agent registry of one community hears (docs/agent-registry.md), and the one message it sends
// its community: the events (arrivals, departures) to deliver live there and to the other nodes.
import type { StoredEvent } from '../../infra/store/event-store.js'
import type { VerifiedEvent } from '../../protocols/nip01/event.js'

export type RegistryMsg =
  /** a heartbeat of `pubkey` was recorded here (the presence store took it) */
  | { type: 'Heartbeat'; pubkey: string }
  /** a kind 31990 of `pubkey` took effect here (stored and offered live) */
  | { type: 'Announced'; pubkey: string }
  /** a goodbye of `pubkey` is being cleared from the presence store: its departure is the goodbye's, not the sweep's */
  | { type: 'Goodbye'; pubkey: string }
  /** that clearing ended; `cleared` false: the presence store failed, or its answer was lost */
  | { type: 'GoodbyeDone'; pubkey: string; cleared: boolean }
  /** a heartbeat's author not tracked here: its stored announcement, if any (`checked` false: the lookup failed) */
  | { type: 'AgentSeen'; pubkey: string; announcement?: StoredEvent; checked: boolean }
  /** the lease of an author whose 31990 took effect, read beside the actor (`live`: it was live then) */
  | { type: 'AgentAnnounced'; pubkey: string; live: boolean }
  /** look for tracked agents whose lease lapsed (the registry's timer, every leaseSweepSeconds) */
  | { type: 'LeaseSweep' }
  /** the tracked agents' leases, read beside the actor (`live` undefined: the presence store failed) */
  | { type: 'LeasesChecked'; tracked: string[]; live: Set<string> | undefined }
  /** agents the sweep found live but held by no connection here, told to itself behind what is queued (agent-tracking.ts) */
  | { type: 'Unheld'; pubkeys: string[] }

/** What the registry tells its community: deliver these (an arrival offered again, or a relay-signed departure). */
export interface RegistryAnnounce {
  type: 'Announce'
  events: { event: VerifiedEvent; raw: string }[]
  from: 'registry'
}
