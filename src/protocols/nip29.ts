import { isHex64 } from './ids.js'
import type { NostrEvent } from './nip01/event.js'
import type { EventTemplate } from './nip01/sign.js'
import { KIND_GROUP_PINS, KIND_UPDATE_PINS, type Pin, parsePins } from './nip29-pins.js'
import { reason } from './reasons.js'
import { err, ok, type Result } from './result.js'

/*
 * NIP-29 channels inside a community: the `h` tag, the moderation and user events that change a channel, and
 * the relay-signed events (39000–39005) that describe it, with who may read them. Pure: the community actor looks the channel up,
 * asks `authorize`, applies the action to the ChannelStore, then publishes what `*Template` builds.
 */

export const KIND_PUT_USER = 9000
export const KIND_REMOVE_USER = 9001
export const KIND_EDIT_METADATA = 9002
export const KIND_DELETE_EVENT = 9005
export const KIND_CREATE_GROUP = 9007
export const KIND_DELETE_GROUP = 9008
export const KIND_JOIN_REQUEST = 9021
export const KIND_LEAVE_REQUEST = 9022
export const KIND_GROUP_METADATA = 39_000
export const KIND_GROUP_ADMINS = 39_001
export const KIND_GROUP_MEMBERS = 39_002
export const KIND_GROUP_ROLES = 39_003
/** NIP-29 LiveKit participants: Apiary publishes none, and takes none from anyone else. */
export const KIND_LIVEKIT_PARTICIPANTS = 39_004

/** NIP-29: "MUST be created by the relay master key only"; anyone else's are refused. */
export const RELAY_ONLY_KINDS: ReadonlySet<number> = new Set([
  KIND_GROUP_METADATA,
  KIND_GROUP_ADMINS,
  KIND_GROUP_MEMBERS,
  KIND_GROUP_ROLES,
  KIND_LIVEKIT_PARTICIPANTS,
  KIND_GROUP_PINS,
])
/** The relay-signed state a `hidden` channel shows its members only (NIP-29: "hide group metadata from non-members"). */
export const GROUP_STATE_KINDS: readonly number[] = [...RELAY_ONLY_KINDS]
/** Who is in a channel: members only for a `private` channel, unless the community opens them (publicMemberLists). */
export const MEMBER_LIST_KINDS: readonly number[] = [KIND_GROUP_ADMINS, KIND_GROUP_MEMBERS]
/**
 * NIP-29 moderation and user management events (9000–9022, `h`-tagged): the group state "can be fully
 * reconstructed" from them, so a `hidden` channel shows them to its members only, as it does its 39000–39005.
 */
export const GROUP_MANAGEMENT_KINDS: readonly number[] = Array.from(
  { length: KIND_LEAVE_REQUEST - KIND_PUT_USER + 1 },
  (_, i) => KIND_PUT_USER + i,
)

/** NIP-29 group ids: `a-z0-9-_`; 64 characters keeps them inside tag and key limits. */
export const CHANNEL_ID = /^[a-z0-9_-]{1,64}$/
// Display fields are for a channel list, not documents.
export const MAX_CHANNEL_NAME_CHARS = 128
export const MAX_CHANNEL_ABOUT_CHARS = 2_000
export const MAX_CHANNEL_PICTURE_CHARS = 1_000

export type ChannelRole = 'admin' | 'member'

export interface ChannelMetadata {
  name?: string
  about?: string
  picture?: string
  private?: boolean
  closed?: boolean
  hidden?: boolean
}

export type ChannelAction =
  | { type: 'create'; channel: string; metadata: ChannelMetadata }
  | { type: 'put-user'; channel: string; pubkey: string; role: ChannelRole }
  | { type: 'remove-user'; channel: string; pubkey: string }
  | { type: 'edit-metadata'; channel: string; metadata: ChannelMetadata }
  | { type: 'delete-event'; channel: string; ids: string[] }
  | { type: 'delete-group'; channel: string }
  /** the whole pin list, in order (NIP-29 9010): the relay mirrors it in its 39005 */
  | { type: 'update-pins'; channel: string; pins: Pin[] }
  | { type: 'join'; channel: string }
  | { type: 'leave'; channel: string }
  /** any other event carrying an `h` tag: a message to the channel */
  | { type: 'post'; channel: string }

/** What the gate knows about a channel when it decides an action. */
export interface ChannelFacts {
  /** undefined: no such channel */
  channel?: { private: boolean; closed: boolean; deleted: boolean }
  /** the author's role in the channel; undefined when not a member */
  role?: ChannelRole
  /** community admins (and the relay itself) moderate every channel */
  moderator: boolean
}

/** A channel as readers see it: what decides who reads its events and its relay-signed state. */
export interface ChannelReadFlags {
  private: boolean
  hidden: boolean
  deleted: boolean
}

/** Who may read an event of a channel: anyone the community lets read, the channel's members, or nobody. */
export type Audience = 'all' | 'members' | 'none'

/** What an accepted action asks the relay to do besides storing the event. */
export type Verdict = { effect: 'apply' } | { effect: 'queue' } | { effect: 'none' }

/** The channel an event is addressed to: its single `h` tag, or undefined when it has none. */
export function channelOf(event: Pick<NostrEvent, 'tags'>): Result<string | undefined> {
  let found: string | undefined
  for (const t of event.tags) {
    if (t[0] !== 'h') continue
    if (found !== undefined) return err(reason('invalid', 'an event belongs to one channel: more than one h tag'))
    if (typeof t[1] !== 'string' || !CHANNEL_ID.test(t[1]))
      return err(reason('invalid', 'h tag must be a channel id of a-z0-9-_ (at most 64)'))
    found = t[1]
  }
  return ok(found)
}

/** The `h` tag value, no validation: for routing already-accepted events (fan-out, stored results). */
export function channelTagOf(event: Pick<NostrEvent, 'tags'>): string | undefined {
  for (const t of event.tags) if (t[0] === 'h' && typeof t[1] === 'string') return t[1]
  return undefined
}

/**
 * The channel whose rules decide who reads `event`: its `h` tag, or for the relay-signed state (39000–39005,
 * which carries the channel in `d`) its `d` tag. Undefined: no channel's business.
 */
export function readChannelOf(event: Pick<NostrEvent, 'kind' | 'tags'>): string | undefined {
  if (!RELAY_ONLY_KINDS.has(event.kind)) return channelTagOf(event)
  for (const t of event.tags) if (t[0] === 'd' && typeof t[1] === 'string') return t[1]
  return undefined
}

/**
 * Who reads an event of kind `kind` belonging to `channel` (undefined: no such channel, nothing to hide).
 * NIP-29: `private` hides the messages, `hidden` the group's state (its relay-signed events and the management
 * events it is built from); a private channel's admin and member lists are its members' business too, unless
 * the community opens them (`publicMemberLists`).
 */
export function audienceOf(kind: number, channel: ChannelReadFlags | undefined, publicMemberLists: boolean): Audience {
  if (channel === undefined) return 'all'
  if (channel.deleted) return 'none'
  if (!RELAY_ONLY_KINDS.has(kind)) return channel.private || (channel.hidden && isManagementKind(kind)) ? 'members' : 'all'
  if (channel.hidden) return 'members'
  return channel.private && !publicMemberLists && MEMBER_LIST_KINDS.includes(kind) ? 'members' : 'all'
}

export const isManagementKind = (kind: number) => kind >= KIND_PUT_USER && kind <= KIND_LEAVE_REQUEST

/** What a channel event asks for; undefined when it has no `h` tag (not a channel event). */
export function parseChannelAction(event: NostrEvent): Result<ChannelAction | undefined> {
  const h = channelOf(event)
  if (!h.ok) return h
  const channel = h.value
  if (channel === undefined) {
    if (isManagementKind(event.kind) && isChannelKind(event.kind))
      return err(reason('invalid', `kind ${event.kind} needs an h tag naming the channel`))
    return ok(undefined)
  }
  switch (event.kind) {
    case KIND_CREATE_GROUP:
    case KIND_EDIT_METADATA: {
      const metadata = parseMetadata(event.tags)
      if (!metadata.ok) return metadata
      return ok({ type: event.kind === KIND_CREATE_GROUP ? 'create' : 'edit-metadata', channel, metadata: metadata.value })
    }
    case KIND_PUT_USER:
    case KIND_REMOVE_USER: {
      const p = event.tags.find((t) => t[0] === 'p')
      if (!p || !isHex64(p[1])) return err(reason('invalid', 'a p tag with the member pubkey is required'))
      if (event.kind === KIND_REMOVE_USER) return ok({ type: 'remove-user', channel, pubkey: p[1] })
      // NIP-29 lets relays define roles; ours are admin and member, and an unknown role name means member
      return ok({ type: 'put-user', channel, pubkey: p[1], role: p.slice(2).includes('admin') ? 'admin' : 'member' })
    }
    case KIND_DELETE_EVENT: {
      const ids = event.tags.filter((t) => t[0] === 'e' && isHex64(t[1])).map((t) => t[1] as string)
      if (ids.length === 0) return err(reason('invalid', 'an e tag with the event id is required'))
      return ok({ type: 'delete-event', channel, ids })
    }
    case KIND_DELETE_GROUP:
      return ok({ type: 'delete-group', channel })
    case KIND_UPDATE_PINS: {
      const pins = parsePins(event.tags)
      return pins.ok ? ok({ type: 'update-pins', channel, pins: pins.value }) : pins
    }
    case KIND_JOIN_REQUEST:
      return ok({ type: 'join', channel })
    case KIND_LEAVE_REQUEST:
      return ok({ type: 'leave', channel })
    default:
      return ok({ type: 'post', channel })
  }
}

const isChannelKind = (kind: number) =>
  [
    KIND_PUT_USER,
    KIND_REMOVE_USER,
    KIND_EDIT_METADATA,
    KIND_DELETE_EVENT,
    KIND_CREATE_GROUP,
    KIND_DELETE_GROUP,
    KIND_UPDATE_PINS,
    KIND_JOIN_REQUEST,
    KIND_LEAVE_REQUEST,
  ].includes(kind)

/**
 * Metadata tags of 9007/9002. A flag tag that is absent leaves the flag as it is: an edit that only renames
 * must never turn a private channel public. `private`/`public`, `closed`/`open` and `hidden`/`visible` set them
 * explicitly (NIP-29 names no tag for "not hidden": `visible` is ours, as `public` and `open` were the old revision's).
 */
function parseMetadata(tags: string[][]): Result<ChannelMetadata> {
  const m: ChannelMetadata = {}
  const text = (t: string[], max: number, field: string): Result<string> => {
    const v = t[1] ?? ''
    return typeof v === 'string' && v.length <= max ? ok(v) : err(reason('invalid', `${field} longer than ${max} characters`))
  }
  for (const t of tags) {
    switch (t[0]) {
      case 'name':
      case 'about':
      case 'picture': {
        const max = t[0] === 'name' ? MAX_CHANNEL_NAME_CHARS : t[0] === 'about' ? MAX_CHANNEL_ABOUT_CHARS : MAX_CHANNEL_PICTURE_CHARS
        const v = text(t, max, t[0])
        if (!v.ok) return v
        m[t[0]] = v.value
        break
      }
      case 'private':
      case 'public':
        m.private = t[0] === 'private'
        break
      case 'closed':
      case 'open':
        m.closed = t[0] === 'closed'
        break
      case 'hidden':
      case 'visible':
        m.hidden = t[0] === 'hidden'
        break
    }
  }
  return ok(m)
}

/**
 * May this author do this action? Moderators (community admins, the relay) may do anything to an existing
 * channel; channel admins manage their channel; members post. A refusal names who can fix it.
 */
export function authorize(action: ChannelAction, f: ChannelFacts): Result<Verdict> {
  const { channel } = f
  if (action.type === 'create') {
    if (channel?.deleted) return err(reason('blocked', `channel id ${action.channel} belonged to a deleted channel`))
    if (channel) return err(reason('duplicate', `channel ${action.channel} already exists`))
    return ok({ effect: 'apply' })
  }
  if (!channel || channel.deleted) return err(reason('restricted', `no channel ${action.channel} in this community`))
  const admin = f.moderator || f.role === 'admin'
  switch (action.type) {
    case 'put-user':
    case 'remove-user':
    case 'edit-metadata':
    case 'delete-event':
    case 'delete-group':
    case 'update-pins':
      return admin
        ? ok({ effect: 'apply' })
        : err(reason('restricted', `only the channel's admins may send kind ${kindOfAction(action.type)}`))
    case 'join':
      // NIP-29: a join request from a member MUST be refused with `duplicate:`
      if (f.role) return err(reason('duplicate', 'already a member of this channel'))
      return ok({ effect: channel.closed ? 'queue' : 'apply' })
    case 'leave':
      return f.role ? ok({ effect: 'apply' }) : err(reason('restricted', 'not a member of this channel'))
    case 'post':
      return f.role || f.moderator
        ? ok({ effect: 'none' })
        : err(reason('restricted', 'only members may post to this channel; send a join request (kind 9021)'))
  }
}

const kindOfAction = (t: ChannelAction['type']) =>
  ({ 'put-user': 9000, 'remove-user': 9001, 'edit-metadata': 9002, 'delete-event': 9005, 'delete-group': 9008, 'update-pins': 9010 })[
    t as 'put-user'
  ]

export interface ChannelView {
  id: string
  name: string
  about: string
  picture: string
  private: boolean
  closed: boolean
  hidden: boolean
}

/**
 * kind 39000: how clients show the channel. Both flag spellings, for clients of either NIP-29 revision;
 * `hidden` has one (NIP-29: omitting it means anyone may request the metadata).
 */
export function metadataTemplate(c: ChannelView): EventTemplate {
  const tags = [
    ['d', c.id],
    ['name', c.name],
    ['about', c.about],
    ['picture', c.picture],
    [c.private ? 'private' : 'public'],
    [c.closed ? 'closed' : 'open'],
    ...(c.hidden ? [['hidden']] : []),
  ]
  return { kind: KIND_GROUP_METADATA, tags: tags.filter((t) => t.length === 1 || t[1] !== '' || t[0] === 'name'), content: '' }
}

/** kind 39001: the channel's admins with their role. */
export function adminsTemplate(channel: string, members: readonly { pubkey: string; role: ChannelRole }[]): EventTemplate {
  const tags = [['d', channel], ...members.filter((m) => m.role === 'admin').map((m) => ['p', m.pubkey, 'admin'])]
  return { kind: KIND_GROUP_ADMINS, tags, content: '' }
}

/** kind 39002: every member, admins included. */
export function membersTemplate(channel: string, members: readonly { pubkey: string }[]): EventTemplate {
  return { kind: KIND_GROUP_MEMBERS, tags: [['d', channel], ...members.map((m) => ['p', m.pubkey])], content: '' }
}

/** The relay's own 9000/9001 answering a join or leave (NIP-29: "the relay will automatically issue"). */
export function membershipTemplate(channel: string, pubkey: string, added: boolean): EventTemplate {
  return {
    kind: added ? KIND_PUT_USER : KIND_REMOVE_USER,
    tags: [
      ['h', channel],
      ['p', pubkey],
    ],
    content: '',
  }
}
