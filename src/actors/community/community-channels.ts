// NIP-29 channels inside a community actor: decide a channel event before it is stored (plan), change the
// channel rows after it is (apply), and keep the relay-signed 39000–39002 current. The rows are the truth
// every node reads; each change drops the matching cache keys here and, by broadcast, on every other node.
import type { Logger } from '../../infra/log.js'
import type { ChannelStore } from '../../infra/store/channel-store.js'
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
  type Verdict,
} from '../../protocols/nip29.js'
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
  return !parsed.ok || parsed.value === undefined ? (parsed as Result<undefined>) : undefined
}

/**
 * Before storing: is this a channel event, and may its author send it? Writes read the rows fresh (never the
 * membership cache): a removed member must not post on the strength of a cached answer.
 */
export async function planChannelEvent(event: NostrEvent, d: ChannelDeps): Promise<Result<ChannelPlan | undefined>> {
  const now = planChannelEventNow(event, d)
  if (now !== undefined) return now
  const action = (parseChannelAction(event) as { value: ChannelAction }).value
  const { channel, role } = await d.reads.read(action.channel, event.pubkey)
  const verdict = authorize(action, { channel, role, moderator: d.isModerator(event.pubkey) })
  return verdict.ok ? ok({ action, verdict: verdict.value }) : verdict
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
      await deleteChannelEvents(action.channel, action.ids, d)
      return []
    case 'delete-group':
      await deleteChannel(action.channel, d)
      return []
    case 'post':
      return []
  }
}

type Action<T extends ChannelAction['type']> = Extract<ChannelAction, { type: T }>

async function applyMetadata(action: Action<'create' | 'edit-metadata'>, event: NostrEvent, d: ChannelDeps, out: RelayEvent[]) {
  const ch = action.channel
  if (action.type === 'create') {
    const { name = ch, about = '', picture = '', private: secret = false, closed = false, hidden = false } = action.metadata
    const row = { id: ch, name, about, picture, private: secret, closed, hidden, createdAt: event.created_at }
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
  if (joins) await d.channels.putMember(d.community, ch, pubkey, action.type === 'put-user' ? action.role : 'member')
  else await d.channels.removeMember(d.community, ch, pubkey)
  await d.invalidate({ op: 'InvalidateMembership', channel: ch, pubkey })
  // a join or leave of one's own is answered by the relay's 9000/9001 (NIP-29)
  if (self) await saveRelayEvent(d, membershipTemplate(ch, pubkey, joins), out)
  await publishState(d, ch, out, { members: true })
}

/** Only this channel's events: a channel admin moderates their channel, not the community. */
async function deleteChannelEvents(ch: string, ids: string[], d: ChannelDeps) {
  const stored = await d.events.query(d.community, [{ ids }], { now: d.nowSeconds() })
  const mine = stored.filter((s) => s.event.tags.some((t) => t[0] === 'h' && t[1] === ch)).map((s) => s.event.id)
  if (mine.length > 0) await d.events.deleteEvents(d.community, mine)
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
}

/**
 * The relay-signed description of the channel (NIP-29: "should reflect the latest group state"). Each
 * version is signed a second after the stored one when `now` is not later; a burst of changes (an agent
 * adding a thousand members) would push created_at into the future, so past MAX_STATE_AHEAD_SECONDS the
 * version is left to `defer`, which publishes the then-latest state once time has caught up.
 */
export async function publishState(d: ChannelDeps, channel: string, out: RelayEvent[], what: StateWanted): Promise<void> {
  const late: StateWanted = {}
  if (what.metadata) {
    const c = (await d.channels.get(d.community, [channel])).get(channel)
    if (c && !c.deleted && !(await saveRelayEvent(d, metadataTemplate(c), out))) late.metadata = true
  }
  if (what.members) {
    const members = await d.channels.members(d.community, channel)
    const admins = await saveRelayEvent(d, adminsTemplate(channel, members), out)
    const all = await saveRelayEvent(d, membersTemplate(channel, members), out)
    if (!admins || !all) late.members = true
  }
  if (late.metadata || late.members) d.defer(channel, late)
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
    this.pending.set(channel, { metadata: p?.metadata || what.metadata, members: p?.members || what.members })
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
