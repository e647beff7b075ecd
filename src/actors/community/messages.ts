import type { CommunityRecord } from '../../infra/store/community-store.js'
import type { SaveOutcome } from '../../infra/store/event-store.js'
import type { ControlChannel } from '../../protocols/control.js'
import type { VerifiedEvent } from '../../protocols/nip01/event.js'
import type { Filter } from '../../protocols/nip01/filter.js'
import type { Reason } from '../../protocols/reasons.js'
import type { ChannelPlan, StateWanted } from './community-channels.js'
import type { ConnView } from './subscription-index.js'

/** The answer to a publish: what the OK frame says. `message` is '' or a prefixed reason. */
export type PublishOutcome = { accepted: true; message: '' | Reason } | { accepted: false; message: Reason }

export interface CommunityStats {
  id: string
  subscriptions: number
  connections: number
  eventsAccepted: number
  /** connections holding a presence (kind 20001) here */
  presenceHolders: number
}

export type CommunityMsg =
  /** `conn`: the publishing connection (presence is held by it); absent when the relay itself publishes */
  | { type: 'Publish'; event: VerifiedEvent; raw: string; conn?: ConnView; reply: (o: PublishOutcome) => void }
  | {
      type: 'Saved'
      event: VerifiedEvent
      raw: string
      /** `late`: the commit outlived its deadline and may still land (postgres); its outcome comes as LateCommit */
      outcome: SaveOutcome | { status: 'error'; late?: Promise<SaveOutcome> }
      /** a channel event's change, applied once the event is stored */
      plan?: ChannelPlan
      /** the channel whose later writes wait for this one (write-order.ts) */
      ordered?: string
      reply: (o: PublishOutcome) => void
    }
  /** a commit whose result the actor did not take when it came (past its deadline, or while down): apply it now */
  | { type: 'LateCommit'; event: VerifiedEvent; raw: string; outcome: SaveOutcome; plan?: ChannelPlan; ordered?: string }
  /** a channel change failed and its Saved could not be delivered: the channel's waiting writes may go on */
  | { type: 'WriteDone'; channel: string }
  /** the banned event ids (NIP-86 banevent) read from the store; writes wait for the first load */
  | { type: 'BannedEventsLoaded'; ids: string[] }
  | { type: 'BannedEventsFailed'; error: unknown }
  /** forget connections that closed without a Disconnect, and writes that never came back (periodic) */
  | { type: 'Sweep' }
  /** the bus lost this community's events channel for a while: every live subscription may have a gap */
  | { type: 'LiveInterrupted' }
  | { type: 'Subscribe'; conn: ConnView; subId: string; filters: Filter[] }
  | { type: 'Unsubscribe'; connId: string; subId: string }
  | { type: 'Count'; conn: ConnView; subId: string; filters: Filter[]; reply: (count: number | Reason) => void }
  | { type: 'Join'; conn: ConnView }
  | { type: 'Disconnect'; connId: string }
  /** an event another node accepted (raw JSON from the bus) */
  | { type: 'RemoteEvent'; raw: string }
  /** a signed control payload from the bus, not yet verified */
  | { type: 'Control'; channel: ControlChannel; raw: string }
  /** close this node's sockets authenticated as `pubkey` (a ban); `broadcast` also tells the other nodes */
  | { type: 'DisconnectPubkey'; pubkey: string; reason: string; broadcast: boolean }
  | { type: 'DisconnectCommunity'; reason: string; broadcast: boolean; done?: () => void }
  | { type: 'Stats'; reply: (s: CommunityStats) => void }
  /** publish a channel's relay-signed state now (deferred while a burst of changes was ahead of the clock) */
  | { type: 'PublishChannelState'; channel: string; what: StateWanted }
  /** the store's record changed (settings, roster, admins, kind rules, banned events): use it from now on */
  | { type: 'RecordChanged'; record: CommunityRecord }
