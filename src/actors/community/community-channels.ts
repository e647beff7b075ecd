// NIP-29 channels inside a community actor: decide a channel event before it is stored (plan), change the
// channel rows after it is (apply), and keep the relay-signed 39000–39003 and 39005 current. The rows are the truth
// every node reads; each change drops the matching cache keys here and, by broadcast, on every other node.
import type { Logger } from '../../infra/log.js'
import type { ChannelInit, ChannelStore } from '../../infra/store/channel-store.js'
import type { EventStore } from '../../infra/store/event-store.js'
import type { CacheInvalidationOp } from '../../protocols/control.js'
import { asVerified, type NostrEvent, type VerifiedEvent } from '../../protocols/nip01/event.js'
import type { EventTemplate } from '../../protocols/nip01/sign.js'
import {
  adminsTemplate,
  authorize,
  type ChannelAction,
  GROUP_STATE_KINDS,
  membershipTemplate,
  membersTemplate,
  metadataTemplate,
  parseChannelAction,
  RELAY_ONLY_KINDS,
  rolesTemplate,
  type Verdict,
} from '../../protocols/nip29.js'
import { KIND_UPDATE_PINS, parsePins, pinsTemplate } from '../../protocols/nip29-pins.js'
import { standingOf } from '../../protocols/nip29-roles.js'
import { checkLatePublication, checkPrevious, type LatePublication, parsePrevious } from '../../protocols/nip29-timeline.js'
import { reason } from '../../protocols/reasons.js'
import { err, ok, type Result } from '../../protocols/result.js'
import type { ChannelReads } from './channel-reads.js'

export interface ChannelDeps {
  community: string
  channels: ChannelStore
  /** the fresh reads a write is decided on, batched per turn */
  reads: ChannelReads
  events: EventStore
  /** the key `sign` signs with: the community's own (infra/community-key.ts), the only author of its 39000–39003 */
  relayPubkey: string
  /** community admins (and the relay) moderate every channel */
  isModerator: (pubkey: string) => boolean
  sign: (t: EventTemplate, createdAt: number) => NostrEvent
  /** publish this channel's state later (a burst of changes got ahead of the clock); merged per channel */
  defer: (channel: string, what: StateWanted) => void
  /** drop the keys here and tell every other node (best effort: the cache TTL bounds a lost broadcast) */
  invalidate: (op: CacheInvalidationOp) => Promise<void>
  nowSeconds: () => number
  /** how old a channel event may arrive (NIP-29 late publication) */
  latePublication: LatePublication
  log: Logger
}

export interface ChannelPlan {
  action: ChannelAction
  verdict: Verdict
  /** the relay mesh decides it: the channel's owner node plans, stores and applies it (relay/mesh.ts) */
  forward?: true
}

/** An event the relay signed and stored because of a channel change; the caller fans it out. */
export interface RelayEvent {
  event: VerifiedEvent
  raw: string
}

/**
 * planChannelEvent for what needs no rows (an event that is no channel event, or one refused on its face):
 * undefined when the rows must be read.
 */
export function planChannelEventNow(event: NostrEvent, d: Pick<ChannelDeps, 'relayPubkey'>): Result<undefined> | undefined {
  if (RELAY_ONLY_KINDS.has(event.kind) && event.pubkey !== d.relayPubkey)
    return err(reason('restricted', `kind ${event.kind} is published by the relay only`))
  const parsed = parseChannelAction(event)
  if (!parsed.ok || parsed.value === undefined) return parsed as Result<undefined>
  const refs = parsePrevious(event)
  return refs.ok ? undefined : refs
}

/**
 * Before storing: is this a channel event, and may its author send it? Writes read the rows fresh (never the
 * membership cache): a removed member must not post on the strength of a cached answer. Its `previous`
 * references are looked up in the same read, among the channel's latest events in the store every node shares.
 */
export async function planChannelEvent(
  event: NostrEvent,
  d: Pick<ChannelDeps, 'relayPubkey' | 'reads' | 'isModerator' | 'nowSeconds' | 'latePublication'>,
): Promise<Result<ChannelPlan | undefined>> {
  const now = planChannelEventNow(event, d)
  if (now !== undefined) return now
  const action = (parseChannelAction(event) as { value: ChannelAction }).value
  // by this node's clock, which under the mesh is the channel owner's for a change: forwarding adds milliseconds
  const late = checkLatePublication(event, d.nowSeconds(), d.latePublication)
  if (!late.ok) return late
  const refs = (parsePrevious(event) as { value: string[] }).value
  // a remove-user's target is read in the same batch: a moderator removes plain members only
  const [{ channel, role, recent }, target] = await Promise.all([
    d.reads.read(action.channel, event.pubkey, refs.length > 0),
    action.type === 'remove-user' ? d.reads.read(action.channel, action.pubkey) : undefined,
  ])
  const verdict = authorize(action, { channel, role, target: target?.role, moderator: d.isModerator(event.pubkey) })
  if (!verdict.ok || refs.length === 0) return verdict.ok ? ok({ action, verdict: verdict.value }) : verdict
  if (recent === undefined) return err(reason('error', 'the previous references could not be checked now, retry shortly'))
  const known = checkPrevious(refs, recent)
  return known.ok ? ok({ action, verdict: verdict.value }) : known
}

/** After the event is stored: change the rows, sign and store the relay's own events, invalidate caches. */
export async function applyChannelPlan(plan: ChannelPlan, event: NostrEvent, d: ChannelDeps): Promise<RelayEvent[]> {
  const { action } = plan
  if (plan.verdict.effect !== 'apply') return []
  const out: RelayEvent[] = []
  switch (action.type) {
    case 'create':
    case 'edit-metadata':
      await applyMetadata(action, event, d, out)
      return out
    case 'put-user':
    case 'join':
    case 'remove-user':
    case 'leave':
      await applyMembership(action, event, d, out)
      return out
    case 'delete-event':
      await deleteChannelEvents(action.channel, action.ids, d, plan.verdict.spareStaff ? event.pubkey : undefined)
      return []
    case 'delete-group':
      await deleteChannel(action.channel, d)
      return []
    case 'update-pins':
      if (!(await publishPins(d, action.channel, out, event))) d.defer(action.channel, { pins: true })
      return out
    case 'post':
    case 'create-invite':
      return []
  }
}

type Action<T extends ChannelAction['type']> = Extract<ChannelAction, { type: T }>

async function applyMetadata(action: Action<'create' | 'edit-metadata'>, event: NostrEvent, d: ChannelDeps, out: RelayEvent[]) {
  const ch = action.channel
  if (action.type === 'create') {
    const m = action.metadata
    const row: ChannelInit = {
      id: ch,
      name: m.name ?? ch,
      about: m.about ?? '',
      picture: m.picture ?? '',
      banner: m.banner ?? '',
      // a 9007 states every flag (parseChannelAction): absent ones are off
      private: m.private ?? false,
      restricted: m.restricted ?? false,
      closed: m.closed ?? false,
      hidden: m.hidden ?? false,
      supportedKinds: m.supportedKinds ?? null,
      createdAt: event.created_at,
    }
    if ((await d.channels.create(d.community, row, event.pubkey)) === 'exists') return
  } else if (!(await d.channels.update(d.community, ch, action.metadata))) return
  await d.invalidate({ op: 'InvalidateVisibility', channel: ch })
  await publishState(d, ch, out, action.type === 'create' ? { metadata: true, members: true } : { metadata: true })
}

async function applyMembership(
  action: Action<'put-user' | 'join' | 'remove-user' | 'leave'>,
  event: NostrEvent,
  d: ChannelDeps,
  out: RelayEvent[],
) {
  const ch = action.channel
  const self = action.type === 'join' || action.type === 'leave'
  const pubkey = self ? event.pubkey : action.pubkey
  const joins = action.type === 'join' || action.type === 'put-user'
  if (joins) await d.channels.putMember(d.community, ch, pubkey, action.type === 'put-user' ? action.roles : [])
  else await d.channels.removeMember(d.community, ch, pubkey)
  await membershipChanged(d, ch, pubkey, { self, joins }, out)
}

/** After a member's row changed: drop its cached answers, answer a join or leave of its own, publish the lists. */
export async function membershipChanged(
  d: ChannelDeps,
  ch: string,
  pubkey: string,
  how: { self: boolean; joins: boolean },
  out: RelayEvent[],
): Promise<void> {
  await d.invalidate({ op: 'InvalidateMembership', channel: ch, pubkey })
  // a join or leave of one's own is answered by the relay's 9000/9001 (NIP-29)
  if (how.self) await saveRelayEvent(d, membershipTemplate(ch, pubkey, how.joins), out)
  await publishState(d, ch, out, { members: true })
}

/**
 * Only this channel's events: a channel admin moderates their channel, not the community. `moderator`: the
 * author of a moderator's 9005, which leaves the events of admins and moderators (the channel's, the
 * community's, the relay's) in place, its own excepted.
 */
async function deleteChannelEvents(ch: string, ids: string[], d: ChannelDeps, moderator?: string) {
  const stored = await d.events.query(d.community, [{ ids }], { now: d.nowSeconds() })
  let mine = stored.map((s) => s.event).filter((e) => e.tags.some((t) => t[0] === 'h' && t[1] === ch))
  if (moderator !== undefined && mine.length > 0) {
    const authors = [...new Set(mine.map((e) => e.pubkey))]
    const roles = await d.channels.rolesOf(d.community, ch, authors)
    const staff = (p: string) => d.isModerator(p) || standingOf(roles.get(p) ?? []) !== 'member'
    mine = mine.filter((e) => e.pubkey === moderator || !staff(e.pubkey))
  }
  const doomed = mine.map((e) => e.id)
  if (doomed.length > 0) await d.events.deleteEvents(d.community, doomed)
}

async function deleteChannel(ch: string, d: ChannelDeps) {
  await d.channels.remove(d.community, ch)
  await d.invalidate({ op: 'ChannelDeleted', channel: ch })
  const kinds = [...GROUP_STATE_KINDS]
  const state = await d.events.query(d.community, [{ kinds, authors: [d.relayPubkey], tags: { d: [ch] } }], { now: d.nowSeconds() })
  const ids = state.map((s) => s.event.id)
  if (ids.length > 0) await d.events.deleteEvents(d.community, ids)
}

/**
 * The channel rows change after the event is stored. A failure there leaves the event stored and the change
 * not made: the client hears `error:` only through the log; the event itself is the record of the request.
 */
export async function applyChannelPlanLogged(plan: ChannelPlan, event: NostrEvent, d: ChannelDeps): Promise<RelayEvent[]> {
  try {
    return await applyChannelPlan(plan, event, d)
  } catch (error) {
    d.log.error({ err: error, community: d.community, eventId: event.id, action: plan.action.type }, 'channel change failed')
    return []
  }
}

export interface StateWanted {
  metadata?: boolean
  members?: boolean
  /** 39005, from the channel's newest 9010 */
  pins?: boolean
}

/**
 * The relay-signed description of the channel (NIP-29: "should reflect the latest group state"). Each
 * version is signed a second after the stored one when `now` is not later; a burst of changes (an agent
 * adding a thousand members) would push created_at into the future, so past MAX_STATE_AHEAD_SECONDS the
 * version is left to `defer`, which publishes the then-latest state once time has caught up.
 */
export async function publishState(d: ChannelDeps, channel: string, out: RelayEvent[], what: StateWanted): Promise<void> {
  const late: StateWanted = {}
  const c = what.metadata || what.pins ? (await d.channels.get(d.community, [channel])).get(channel) : undefined
  const live = c !== undefined && !c.deleted
  if (what.metadata && live && !(await saveRelayEvent(d, metadataTemplate(c), out))) late.metadata = true
  if (what.pins && live && !(await publishPins(d, channel, out))) late.pins = true
  if (what.members) {
    const members = await d.channels.members(d.community, channel)
    const admins = await saveRelayEvent(d, adminsTemplate(channel, members), out)
    const all = await saveRelayEvent(d, membersTemplate(channel, members), out)
    if (!admins || !all) late.members = true
  }
  await publishRolesIfStale(d, channel, out)
  if (late.metadata || late.members || late.pins) d.defer(channel, late)
}

/**
 * 39005 mirrors the channel's newest 9010 by created_at (NIP-29 state is rebuilt from its events in order), so
 * an older list arriving late never replaces a newer one; `applied`, the one just stored, wins a tie: of two
 * lists sent in the same second, the later one stays. false: dated too far ahead, not signed (see publishState).
 */
async function publishPins(d: ChannelDeps, channel: string, out: RelayEvent[], applied?: NostrEvent): Promise<boolean> {
  const filter = { kinds: [KIND_UPDATE_PINS], tags: { h: [channel] }, limit: 1 }
  const [newest] = await d.events.query(d.community, [filter], { now: d.nowSeconds() })
  const source = applied && (!newest || newest.event.created_at <= applied.created_at) ? applied : newest?.event
  const pins = source && parsePins(source.tags)
  return pins?.ok ? saveRelayEvent(d, pinsTemplate(channel, pins.value), out) : true
}

/**
 * 39003 is the same for every channel and changes only with this code, so it is signed when missing or
 * different, not on every change: a new channel gets it with its first state, and a channel from before it
 * (or from a build with other roles) at its next change. A sweep of every channel at start would sign for
 * channels nobody uses, race on every node at once, and write outside a mesh owner's fence.
 */
async function publishRolesIfStale(d: ChannelDeps, channel: string, out: RelayEvent[]): Promise<void> {
  const want = rolesTemplate(channel)
  const filter = { kinds: [want.kind], authors: [d.relayPubkey], tags: { d: [channel] }, limit: 1 }
  const [current] = await d.events.query(d.community, [filter], { now: d.nowSeconds() })
  const roleTags = (tags: readonly string[][] | undefined) => JSON.stringify((tags ?? []).filter((t) => t[0] === 'role'))
  if (current && roleTags(current.event.tags) === roleTags(want.tags)) return
  await saveRelayEvent(d, want, out)
}

// Clients and other relays refuse events dated far ahead (15 min is common); a few seconds is harmless.
const MAX_STATE_AHEAD_SECONDS = 5
// A version another node stored in between makes the save `superseded`: read again and retry, a few times.
const MAX_STATE_RETRIES = 3

/** false: this version would be dated too far ahead and was not signed (the caller defers it). */
async function saveRelayEvent(d: ChannelDeps, t: EventTemplate, out: RelayEvent[]): Promise<boolean> {
  const dTag = t.tags?.find((x) => x[0] === 'd')?.[1]
  for (let i = 0; i <= MAX_STATE_RETRIES; i++) {
    const now = d.nowSeconds()
    let createdAt = now
    if (dTag !== undefined) {
      const filter = { kinds: [t.kind], authors: [d.relayPubkey], tags: { d: [dTag] }, limit: 1 }
      const [current] = await d.events.query(d.community, [filter], { now })
      if (current) createdAt = Math.max(createdAt, current.event.created_at + 1)
      if (createdAt > now + MAX_STATE_AHEAD_SECONDS) return false
    }
    const event = asVerified(d.sign(t, createdAt))
    const raw = JSON.stringify(event)
    const saved = await d.events.save(d.community, event, raw)
    if (saved.status === 'saved') {
      out.push({ event, raw })
      return true
    }
    if (saved.status !== 'superseded') break
  }
  d.log.warn({ community: d.community, kind: t.kind }, 'relay-signed channel event not stored')
  return true
}

/** Channels whose state waits for the clock, merged per channel and published together once a second. */
export class DeferredState {
  private readonly pending = new Map<string, StateWanted>()
  private timer: NodeJS.Timeout | undefined

  constructor(private readonly publish: (channel: string, what: StateWanted) => void) {}

  add(channel: string, what: StateWanted): void {
    const p = this.pending.get(channel)
    this.pending.set(channel, { metadata: p?.metadata || what.metadata, members: p?.members || what.members, pins: p?.pins || what.pins })
    this.timer ??= setTimeout(() => this.flush(), 1_000)
  }

  stop(): void {
    clearTimeout(this.timer)
    this.pending.clear()
  }

  private flush() {
    this.timer = undefined
    for (const [channel, what] of this.pending) this.publish(channel, what)
    this.pending.clear()
  }
}
