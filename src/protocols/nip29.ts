import { isHex64 } from './ids.js'
import type { NostrEvent } from './nip01/event.js'
import type { EventTemplate } from './nip01/sign.js'
import { type InviteRequest, joinCodeOf, parseCreateInvite } from './nip29-invites.js'
import { KIND_GROUP_PINS, KIND_UPDATE_PINS, type Pin, parsePins } from './nip29-pins.js'
import { type ChannelRole, isPrivileged, type MemberRoles, parseMemberRoles, SUPPORTED_ROLES, standingOf } from './nip29-roles.js'
import { type Reason, reason } from './reasons.js'
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
export const KIND_CREATE_INVITE = 9009
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

/**
 * NIP-29: a group id is "a random string of any length". Bounded here: NDK's ids are 24 letters and digits,
 * and 64 keeps an id inside tag, key and log limits. Control characters and whitespace have no place in an id
 * (they forge log lines and split table columns), and a lone surrogate is no text PostgreSQL can store.
 */
export const MAX_CHANNEL_ID_CHARS = 64
// Cc is C0, DEL and C1; with the u flag Cs matches only a surrogate that pairs with none; \s is Unicode whitespace
const NOT_IN_CHANNEL_ID = /[\p{Cc}\p{Cs}\s]/u

/** A NIP-29 group id Apiary serves: 1 to 64 UTF-16 code units, no control character, whitespace or lone surrogate. */
export function isChannelId(id: unknown): id is string {
  return typeof id === 'string' && id.length >= 1 && id.length <= MAX_CHANNEL_ID_CHARS && !NOT_IN_CHANNEL_ID.test(id)
}

/** The rule of isChannelId in words, for the messages that refuse an id. */
export const CHANNEL_ID_RULE = `1 to ${MAX_CHANNEL_ID_CHARS} characters, without whitespace or control characters`

// Display fields are for a channel list, not documents.
export const MAX_CHANNEL_NAME_CHARS = 128
export const MAX_CHANNEL_ABOUT_CHARS = 2_000
export const MAX_CHANNEL_PICTURE_CHARS = 1_000
export const MAX_CHANNEL_BANNER_CHARS = 1_000
/** kinds one `supported_kinds` tag may list: a channel's kinds are a handful (chat, threads, articles) */
export const MAX_SUPPORTED_KINDS = 64

export type { ChannelRole, MemberRoles }

/**
 * NIP-29's access flags in 39000: `private` (only members read), `restricted` (only members write), `hidden`
 * (the state shown to members only), `closed` (join requests wait for an admin); absent means off.
 */
export const CHANNEL_FLAGS = ['private', 'restricted', 'hidden', 'closed'] as const
export type ChannelFlag = (typeof CHANNEL_FLAGS)[number]

/**
 * What a 9007 or 9002 says. A field left undefined stays as it is (a 9002 that does not carry it); a 9007 and
 * a 9002 carrying any flag tag define all four flags and `supportedKinds` (see parseMetadata).
 */
export interface ChannelMetadata extends Partial<Record<ChannelFlag, boolean>> {
  name?: string
  about?: string
  picture?: string
  banner?: string
  /** null: every kind (no `supported_kinds` tag) */
  supportedKinds?: readonly number[] | null
}

export type ChannelAction =
  | { type: 'create'; channel: string; metadata: ChannelMetadata }
  /** `roles` replace the member's roles (NIP-29: "the user roles must just be updated") */
  | { type: 'put-user'; channel: string; pubkey: string; roles: string[] }
  | { type: 'remove-user'; channel: string; pubkey: string }
  | { type: 'edit-metadata'; channel: string; metadata: ChannelMetadata }
  | { type: 'delete-event'; channel: string; ids: string[] }
  | { type: 'delete-group'; channel: string }
  /** the whole pin list, in order (NIP-29 9010): the relay mirrors it in its 39005 */
  | { type: 'update-pins'; channel: string; pins: Pin[] }
  /** `code`: an invite code (NIP-29: "to preauthorize acceptance") */
  | { type: 'join'; channel: string; code?: string }
  | ({ type: 'create-invite'; channel: string } & InviteRequest)
  | { type: 'leave'; channel: string }
  /** any other event carrying an `h` tag: a message to the channel */
  | { type: 'post'; channel: string; kind: number }

/** What the gate knows about a channel when it decides an action. */
export interface ChannelFacts {
  /** undefined: no such channel */
  channel?: Pick<ChannelView, 'restricted' | 'closed' | 'supportedKinds'> & { deleted: boolean }
  /** what the author's roles let it do in the channel; undefined when not a member */
  role?: ChannelRole
  /** the same of a remove-user's target (a moderator removes plain members only); undefined when not a member */
  target?: ChannelRole
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

/**
 * What an accepted action asks the relay to do besides storing the event: `apply` it to the channel's rows,
 * nothing more (`none`), or nothing more and answer OK false with `answer` (`queue`: a join request to a closed
 * channel is stored for its admins to read, yet NIP-29 says the relay "MUST reject the request").
 */
export type Verdict =
  /** `spareStaff`: a moderator's 9005, which leaves the events of admins and moderators in place */
  | { effect: 'apply'; spareStaff?: true }
  | { effect: 'queue'; answer: Reason }
  | { effect: 'none' }
  /**
   * acted on and answered, never stored (an invite code is a secret a stored event would show every reader
   * of the channel): a 9009, or a 9021 with a code; `redeem`: the channel is closed, the code must admit it
   */
  | { effect: 'command'; redeem?: boolean }

/** The channel an event is addressed to: its single `h` tag, or undefined when it has none. */
export function channelOf(event: Pick<NostrEvent, 'tags'>): Result<string | undefined> {
  let found: string | undefined
  for (const t of event.tags) {
    if (t[0] !== 'h') continue
    if (found !== undefined) return err(reason('invalid', 'an event belongs to one channel: more than one h tag'))
    if (!isChannelId(t[1])) return err(reason('invalid', `an h tag names a channel: ${CHANNEL_ID_RULE}`))
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
      const metadata = parseMetadata(event.tags, event.kind === KIND_CREATE_GROUP)
      if (!metadata.ok) return metadata
      return ok({ type: event.kind === KIND_CREATE_GROUP ? 'create' : 'edit-metadata', channel, metadata: metadata.value })
    }
    case KIND_PUT_USER:
    case KIND_REMOVE_USER: {
      const p = event.tags.find((t) => t[0] === 'p')
      if (!p || !isHex64(p[1])) return err(reason('invalid', 'a p tag with the member pubkey is required'))
      if (event.kind === KIND_REMOVE_USER) return ok({ type: 'remove-user', channel, pubkey: p[1] })
      const roles = parseMemberRoles(p.slice(2))
      return roles.ok ? ok({ type: 'put-user', channel, pubkey: p[1], roles: roles.value }) : roles
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
    case KIND_CREATE_INVITE: {
      const invite = parseCreateInvite(event)
      return invite.ok ? ok({ type: 'create-invite', channel, ...invite.value }) : invite
    }
    case KIND_JOIN_REQUEST: {
      const code = joinCodeOf(event)
      if (!code.ok) return code
      return ok(code.value === undefined ? { type: 'join', channel } : { type: 'join', channel, code: code.value })
    }
    case KIND_LEAVE_REQUEST:
      return ok({ type: 'leave', channel })
    default:
      return ok({ type: 'post', channel, kind: event.kind })
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
    KIND_CREATE_INVITE,
    KIND_UPDATE_PINS,
    KIND_JOIN_REQUEST,
    KIND_LEAVE_REQUEST,
  ].includes(kind)

/**
 * Each flag tag: the flag it sets, and to what. The "off" tags are no NIP-29 tags (absence means off): `public`
 * and `open` are the old revision's, `unrestricted` and `visible` Apiary's, for a 9002 that turns a flag off.
 */
const FLAG_TAGS: ReadonlyMap<string, readonly [ChannelFlag, boolean]> = new Map([
  ['private', ['private', true]],
  ['public', ['private', false]],
  ['restricted', ['restricted', true]],
  ['unrestricted', ['restricted', false]],
  ['hidden', ['hidden', true]],
  ['visible', ['hidden', false]],
  ['closed', ['closed', true]],
  ['open', ['closed', false]],
])

const TEXT_FIELDS = new Map([
  ['name', MAX_CHANNEL_NAME_CHARS],
  ['about', MAX_CHANNEL_ABOUT_CHARS],
  ['picture', MAX_CHANNEL_PICTURE_CHARS],
  ['banner', MAX_CHANNEL_BANNER_CHARS],
] as const)

/**
 * Metadata tags of 9007/9002. `full` (a 9007) defines every flag and `supportedKinds`, absence meaning off and
 * "every kind" as NIP-29 reads it. A 9002 is full too once it carries any flag tag: it states the flags, so a
 * flag it leaves out is off, and without `supported_kinds` every kind is accepted again. A 9002 without flag
 * tags changes only what it carries: an edit that only renames (NDK's setMetadata) never makes a private
 * channel public. Display fields change only when carried (an empty value clears one).
 */
function parseMetadata(tags: string[][], full: boolean): Result<ChannelMetadata> {
  const m: ChannelMetadata = {}
  const flags: Partial<Record<ChannelFlag, boolean>> = {}
  let kinds: readonly number[] | undefined
  for (const t of tags) {
    const [name = ''] = t
    const flag = FLAG_TAGS.get(name)
    if (flag) {
      const [which, on] = flag
      if (flags[which] === !on) return err(reason('invalid', `two tags contradict each other on the ${which} flag`))
      flags[which] = on
      continue
    }
    const max = TEXT_FIELDS.get(name as 'name')
    if (max !== undefined) {
      const v = t[1] ?? ''
      if (typeof v !== 'string' || v.length > max) return err(reason('invalid', `${name} longer than ${max} characters`))
      // PostgreSQL text cannot hold NUL: such a field would be stored in the event and never in the row
      if (v.includes('\0')) return err(reason('invalid', `${name} holds a NUL character`))
      m[name as 'name'] = v
    } else if (name === 'supported_kinds') {
      if (kinds !== undefined) return err(reason('invalid', 'one supported_kinds tag at most'))
      const parsed = parseSupportedKinds(t.slice(1))
      if (!parsed.ok) return parsed
      kinds = parsed.value
    }
  }
  if (full || Object.keys(flags).length > 0) {
    for (const f of CHANNEL_FLAGS) m[f] = flags[f] ?? false
    m.supportedKinds = kinds ?? null
  } else if (kinds !== undefined) m.supportedKinds = kinds
  return ok(m)
}

const KIND_TEXT = /^(0|[1-9][0-9]{0,4})$/

/** NIP-29 `supported_kinds`: stringified kinds (0–65535), at most MAX_SUPPORTED_KINDS; none means no kind. */
function parseSupportedKinds(values: string[]): Result<readonly number[]> {
  if (values.length > MAX_SUPPORTED_KINDS) return err(reason('invalid', `supported_kinds lists at most ${MAX_SUPPORTED_KINDS} kinds`))
  const kinds = new Set<number>()
  for (const v of values) {
    const kind = KIND_TEXT.test(v) ? Number(v) : Number.NaN
    if (!(kind <= 65_535)) return err(reason('invalid', 'supported_kinds holds kinds as decimal numbers from 0 to 65535'))
    kinds.add(kind)
  }
  return ok([...kinds])
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
  if (!admin && f.role === 'moderator' && (action.type === 'remove-user' || action.type === 'delete-event'))
    return authorizeModerator(action, f)
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
      if (action.code !== undefined) return ok({ effect: 'command', redeem: channel.closed })
      return ok(channel.closed ? closedJoin() : { effect: 'apply' })
    case 'leave':
      return f.role ? ok({ effect: 'apply' }) : err(reason('restricted', 'not a member of this channel'))
    case 'post':
      if (channel.restricted && !f.role && !f.moderator)
        return err(reason('restricted', 'only members may post to this channel; send a join request (kind 9021)'))
      return checkSupportedKind(action.kind, channel.supportedKinds)
    case 'create-invite':
      return admin ? ok({ effect: 'command' }) : err(reason('restricted', "only the channel's admins may create invite codes"))
  }
}

/** A channel moderator (docs/channels.md): plain members' events and membership, nobody else's. */
function authorizeModerator(action: Extract<ChannelAction, { type: 'remove-user' | 'delete-event' }>, f: ChannelFacts): Result<Verdict> {
  if (action.type === 'delete-event') return ok({ effect: 'apply', spareStaff: true })
  if (f.target === 'admin' || f.target === 'moderator')
    return err(reason('restricted', 'a moderator may not remove an admin or another moderator'))
  return ok({ effect: 'apply' })
}

/**
 * A join request to a closed channel without an invite code: stored, so its admins find it
 * (`{"kinds":[9021],"#h":[id]}`), and refused, saying it is pending (NIP-29: the message "SHOULD explain ... if
 * the request is pending review").
 */
function closedJoin(): Verdict {
  return { effect: 'queue', answer: reason('restricted', "this channel is closed: the join request is pending an admin's approval") }
}

/**
 * NIP-29 `supported_kinds`: a channel that lists them takes no other kind, except NIP-29's own management
 * and user events (9000–9022), without which it could not be run. `blocked:`, not `restricted:`: no author,
 * member or admin, may send that kind there.
 */
function checkSupportedKind(kind: number, supported: readonly number[] | null): Result<Verdict> {
  if (supported === null || supported.includes(kind) || isManagementKind(kind)) return ok({ effect: 'none' })
  const listed = supported.length === 0 ? 'no kind of event' : `only kinds ${supported.join(', ')}`
  return err(reason('blocked', `this channel accepts ${listed}`))
}

const kindOfAction = (t: ChannelAction['type']) =>
  ({ 'put-user': 9000, 'remove-user': 9001, 'edit-metadata': 9002, 'delete-event': 9005, 'delete-group': 9008, 'update-pins': 9010 })[
    t as 'put-user'
  ]

export interface ChannelView extends Record<ChannelFlag, boolean> {
  id: string
  name: string
  about: string
  picture: string
  banner: string
  /** null: every kind */
  supportedKinds: readonly number[] | null
}

/**
 * kind 39000: how clients show the channel. The flags that are on, and no tag for one that is off (NIP-29:
 * "Omitting this tag indicates" the opposite); `supported_kinds` only when the channel limits its kinds.
 */
export function metadataTemplate(c: ChannelView): EventTemplate {
  const tags = [
    ['d', c.id],
    ['name', c.name],
  ]
  for (const [field, value] of Object.entries({ about: c.about, picture: c.picture, banner: c.banner }))
    if (value !== '') tags.push([field, value])
  for (const flag of CHANNEL_FLAGS) if (c[flag]) tags.push([flag])
  if (c.supportedKinds !== null) tags.push(['supported_kinds', ...c.supportedKinds.map(String)])
  return { kind: KIND_GROUP_METADATA, tags, content: '' }
}

/**
 * kind 39001: every member holding a role that grants something, with the strongest such role. NIP-29 allows
 * "one or more"; one keeps nostr-tools' `loadGroup` working, which takes any further role for a permission
 * name and throws on others. Every role a member holds, privileged or not, shows in 39002.
 */
export function adminsTemplate(channel: string, members: readonly { pubkey: string; roles: MemberRoles }[]): EventTemplate {
  const tags = [['d', channel], ...members.filter((m) => isPrivileged(m.roles)).map((m) => ['p', m.pubkey, standingOf(m.roles)])]
  return { kind: KIND_GROUP_ADMINS, tags, content: '' }
}

/** kind 39002: every member, admins included, each with its roles if it has any (where other role names show). */
export function membersTemplate(channel: string, members: readonly { pubkey: string; roles: MemberRoles }[]): EventTemplate {
  return { kind: KIND_GROUP_MEMBERS, tags: [['d', channel], ...members.map((m) => ['p', m.pubkey, ...m.roles])], content: '' }
}

/** kind 39003: the roles that grant something here, with what (NIP-29: "roles supported by this relay"). */
export function rolesTemplate(channel: string): EventTemplate {
  const tags = [['d', channel], ...SUPPORTED_ROLES.map((r) => ['role', r.name, r.description])]
  return { kind: KIND_GROUP_ROLES, tags, content: '' }
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
