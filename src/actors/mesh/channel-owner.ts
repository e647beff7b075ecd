// What the owner of a channel session does with one moderation event, beside its actor: decide it
// on fresh rows, store it (unless it is a command: channel-commands.ts), change the rows, sign and store 39000–39003 — every write fenced by the session's
// generation in the database (infra/store/session-fence.ts), and none begun once the lease is no longer
// believed held. The decisions are the community's own (community-channels.ts); only the sinks differ.
import type { Config } from '../../infra/config-types.js'
import type { Logger } from '../../infra/log.js'
import type { ChannelStore, ChannelWrites } from '../../infra/store/channel-store.js'
import type { EventStore, SaveOutcome } from '../../infra/store/event-store.js'
import type { SessionFence } from '../../infra/store/session-fence.js'
import type { CacheInvalidationOp } from '../../protocols/control.js'
import type { ForwardedAuth } from '../../protocols/mesh/session-frames.js'
import { GENERATION_TAG } from '../../protocols/mesh/state-generation.js'
import type { NostrEvent, VerifiedEvent } from '../../protocols/nip01/event.js'
import type { EventTemplate } from '../../protocols/nip01/sign.js'
import { type Reason, reason } from '../../protocols/reasons.js'
import { runChannelCommand } from '../community/channel-commands.js'
import { ChannelReads, latestIdsOf } from '../community/channel-reads.js'
import {
  applyChannelPlan,
  type ChannelDeps,
  planChannelEvent,
  publishState,
  type RelayEvent,
  type StateWanted,
} from '../community/community-channels.js'
import type { PublishOutcome } from '../community/messages.js'
import { storedAnswer } from '../community/write-answers.js'

/** The stores and signer an owner writes through; `saveFenced` is PostgreSQL's (the mesh runs in cluster mode only). */
export interface OwnerSinks {
  events: EventStore & {
    saveFenced(requests: readonly { community: string; event: VerifiedEvent; raw: string }[], fence: SessionFence): Promise<SaveOutcome[]>
    deleteEventsFenced(community: string, ids: readonly string[], fence: SessionFence): Promise<string[]>
  }
  channels: ChannelStore
  /** the key the relay signs for `community` with (infra/community-key.ts) */
  relayPubkey: (community: string) => string
  sign: (community: string, t: EventTemplate, createdAt: number) => NostrEvent
  /** a write a peer forwarded, judged as a local client's would be (forwarded-write.ts): its refusal, or null */
  judgeForwarded: (community: string, event: VerifiedEvent, auth: ForwardedAuth) => Promise<Reason | null>
  /** community admins and the relay moderate every channel */
  isModerator: (community: string, pubkey: string) => boolean
  /** drop the cache keys on every node (the local community and the bus) */
  invalidate: (community: string, op: CacheInvalidationOp) => Promise<void>
  nowSeconds: () => number
  /** NIP-29 `previous` window and late publication, judged here by the owner's clock (config `channels`) */
  channelRules: Config['channels']
  log: Logger
}

export class LeaseLostError extends Error {
  readonly code = 'APIARY_MESH_LEASE_LOST'
}

export interface Moderated {
  outcome: PublishOutcome
  /** what to deliver and publish: the moderation event and the relay's own events, in order */
  events: RelayEvent[]
}

/**
 * Decide and apply one moderation event as the session's owner. `leaseHeld` is asked before every write: a
 * lease believed lost stops the work with LeaseLostError (the fence would refuse the write anyway).
 * `forwarded`: a peer's client's AUTH state; the write is judged on it first, as a local one was by its community.
 */
export async function moderateAsOwner(
  event: VerifiedEvent,
  raw: string,
  fence: SessionFence,
  channel: string,
  sinks: OwnerSinks,
  lease: OwnerLease,
  forwarded?: ForwardedAuth,
): Promise<Moderated> {
  if (forwarded) {
    const refused = await sinks.judgeForwarded(fence.community, event, forwarded)
    if (refused) return { outcome: { accepted: false, message: refused }, events: [] }
  }
  const deps = channelDeps(fence, sinks, lease)
  const plan = await planChannelEvent(event, deps)
  if (!plan.ok) return { outcome: { accepted: false, message: plan.error }, events: [] }
  if (plan.value === undefined || plan.value.action.channel !== channel) {
    return { outcome: { accepted: false, message: reason('error', 'not a change of this channel') }, events: [] }
  }
  lease.guard()
  if (plan.value.verdict.effect === 'command') {
    const done = await runChannelCommand(plan.value, event, deps)
    return done.ok
      ? { outcome: { accepted: true, message: '' }, events: done.value }
      : { outcome: { accepted: false, message: done.error }, events: [] }
  }
  const [saved] = await sinks.events.saveFenced([{ community: fence.community, event, raw }], fence)
  switch (saved?.status) {
    case 'saved':
      break
    case 'duplicate':
      return { outcome: { accepted: true, message: reason('duplicate', 'already have this event') }, events: [] }
    case 'superseded':
      return { outcome: { accepted: false, message: reason('duplicate', 'a newer version of this event is already stored') }, events: [] }
    case 'deleted':
      return { outcome: { accepted: false, message: reason('blocked', 'this event was deleted by its author') }, events: [] }
    default:
      return { outcome: { accepted: false, message: reason('error', 'could not store the event') }, events: [] }
  }
  const changes = await applyChannelPlan(plan.value, event, deps)
  return { outcome: storedAnswer(plan.value), events: [{ event, raw }, ...changes] }
}

/** The channel's state published again, once the clock has caught up with a burst of changes (DeferredState). */
export async function publishStateAsOwner(
  what: StateWanted,
  fence: SessionFence,
  channel: string,
  sinks: OwnerSinks,
  lease: OwnerLease,
): Promise<Moderated> {
  const out: RelayEvent[] = []
  await publishState(channelDeps(fence, sinks, lease), channel, out, what)
  return { outcome: { accepted: true, message: '' }, events: out }
}

/** The owner's lease as its work sees it: `guard` throws LeaseLostError once it is no longer believed held. */
export interface OwnerLease {
  guard(): void
  /** a state version dated too far ahead: publish the then-latest state later */
  defer(what: StateWanted): void
}

function channelDeps(fence: SessionFence, sinks: OwnerSinks, lease: OwnerLease): ChannelDeps {
  const guard = () => lease.guard()
  const { community } = fence
  const fenced = sinks.channels.fencedWrites(fence)
  const writes: ChannelWrites = {
    create: async (...a) => {
      guard()
      return fenced.create(...a)
    },
    update: async (...a) => {
      guard()
      return fenced.update(...a)
    },
    remove: async (...a) => {
      guard()
      return fenced.remove(...a)
    },
    putMember: async (...a) => {
      guard()
      return fenced.putMember(...a)
    },
    removeMember: async (...a) => {
      guard()
      return fenced.removeMember(...a)
    },
    createInvite: async (...a) => {
      guard()
      return fenced.createInvite(...a)
    },
    redeemInvite: async (...a) => {
      guard()
      return fenced.redeemInvite(...a)
    },
  }
  const channels: ChannelStore = { ...sinks.channels, ...writes }
  const events: EventStore = {
    ...sinks.events,
    save: async (c, e, r) => {
      guard()
      const [outcome] = await sinks.events.saveFenced([{ community: c, event: e, raw: r }], fence)
      return outcome as SaveOutcome
    },
    deleteEvents: async (c, ids) => {
      guard()
      return sinks.events.deleteEventsFenced(c, ids, fence)
    },
  }
  return {
    community,
    channels,
    reads: new ChannelReads(
      sinks.channels,
      community,
      latestIdsOf(sinks.events, community, sinks.channelRules.timelineWindowEvents, sinks.nowSeconds),
    ),
    events,
    relayPubkey: sinks.relayPubkey(community),
    isModerator: (pubkey) => sinks.isModerator(community, pubkey),
    // every state version says which owner wrote it under which generation: the fault checker reads it back
    sign: (t, createdAt) =>
      sinks.sign(community, { ...t, tags: [...(t.tags ?? []), [GENERATION_TAG, String(fence.generation), fence.owner]] }, createdAt),
    defer: (_channel, what) => lease.defer(what),
    invalidate: (op) => sinks.invalidate(community, op),
    nowSeconds: sinks.nowSeconds,
    latePublication: sinks.channelRules,
    log: sinks.log,
  }
}
