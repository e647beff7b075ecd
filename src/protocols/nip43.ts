// NIP-43, relay access metadata and requests (docs/nip43.md): the kinds, the checks of a join or leave
// request, and the relay-signed events a community publishes about its members. Pure; never throws.
import type { Limits } from './limits.js'
import type { NostrEvent } from './nip01/event.js'
import type { Filter } from './nip01/filter.js'
import type { EventTemplate } from './nip01/sign.js'
import { reason } from './reasons.js'
import { err, OK_VOID, ok, type Result } from './result.js'

export const KIND_RELAY_MEMBERS = 13_534
export const KIND_RELAY_ADD_MEMBER = 8_000
export const KIND_RELAY_REMOVE_MEMBER = 8_001
export const KIND_RELAY_JOIN = 28_934
export const KIND_RELAY_INVITE = 28_935
export const KIND_RELAY_LEAVE = 28_936

/** NIP-43: signed by the relay (NIP-11 `self`); anyone else's is refused. */
export const RELAY_MEMBERSHIP_KINDS: ReadonlySet<number> = new Set([
  KIND_RELAY_MEMBERS,
  KIND_RELAY_ADD_MEMBER,
  KIND_RELAY_REMOVE_MEMBER,
  KIND_RELAY_INVITE,
])
/** What says who the members are: served to members, or to every reader when the community makes member lists public. */
export const RELAY_MEMBER_LIST_KINDS: readonly number[] = [KIND_RELAY_MEMBERS, KIND_RELAY_ADD_MEMBER, KIND_RELAY_REMOVE_MEMBER]
export const isRelayMemberListKind = (kind: number) =>
  kind === KIND_RELAY_MEMBERS || kind === KIND_RELAY_ADD_MEMBER || kind === KIND_RELAY_REMOVE_MEMBER

/** A user's request about their own membership: decided by the relay, never stored or relayed. */
export const isMembershipRequest = (kind: number) => kind === KIND_RELAY_JOIN || kind === KIND_RELAY_LEAVE

/** How long an invite code lasts unless its maker says otherwise (NIP-86 createinvite): a day to pass it on. */
export const DEFAULT_INVITE_SECONDS = 86_400

/** NIP-43: a join or leave request's `created_at` "MUST be now, plus or minus a few minutes": five. */
export const CLAIM_WINDOW_SECONDS = 300

/**
 * Codes this relay makes are 22 base64url characters (16 random bytes); anything longer or of other
 * characters cannot be one, and is refused without a store lookup.
 */
const MAX_CLAIM_CHARS = 64
const CLAIM_PATTERN = /^[A-Za-z0-9_-]+$/
export const isPlausibleClaim = (code: string) => code.length <= MAX_CLAIM_CHARS && CLAIM_PATTERN.test(code)

function checkWindow(e: Pick<NostrEvent, 'created_at'>, nowSeconds: number, what: string): Result<void> {
  if (Math.abs(e.created_at - nowSeconds) > CLAIM_WINDOW_SECONDS)
    return err(reason('invalid', `a ${what} request must be dated within ${CLAIM_WINDOW_SECONDS} seconds of now`))
  return OK_VOID
}

/** A 28934's claim: its first `claim` tag's value (possibly empty: an unknown code, refused as such). */
export function parseJoinRequest(e: Pick<NostrEvent, 'created_at' | 'tags'>, nowSeconds: number): Result<string> {
  const dated = checkWindow(e, nowSeconds, 'join')
  if (!dated.ok) return dated
  const claim = e.tags.find((t) => t[0] === 'claim')?.[1]
  if (claim === undefined) return err(reason('invalid', 'a join request needs a claim tag with an invite code'))
  return ok(claim)
}

export const checkLeaveRequest = (e: Pick<NostrEvent, 'created_at'>, nowSeconds: number): Result<void> =>
  checkWindow(e, nowSeconds, 'leave')

/** The NIP-70 tag every NIP-43 event carries: only the relay may republish its own. */
const PROTECTED = ['-']

export const memberListTemplate = (members: readonly string[]): EventTemplate => ({
  kind: KIND_RELAY_MEMBERS,
  tags: [PROTECTED, ...members.map((p) => ['member', p])],
  content: '',
})

export const memberChangeTemplate = (pubkey: string, added: boolean): EventTemplate => ({
  kind: added ? KIND_RELAY_ADD_MEMBER : KIND_RELAY_REMOVE_MEMBER,
  tags: [PROTECTED, ['p', pubkey]],
  content: '',
})

/** `p`: who asked for it, so a client finds its own invite among others (and a reader sees who invited). */
export const inviteTemplate = (code: string, requester: string): EventTemplate => ({
  kind: KIND_RELAY_INVITE,
  tags: [PROTECTED, ['claim', code], ['p', requester]],
  content: '',
})

/** The members a 13534 names, in order. */
export const listedMembersOf = (e: Pick<NostrEvent, 'tags'>): string[] =>
  e.tags.filter((t) => t[0] === 'member' && t[1] !== undefined).map((t) => t[1] as string)

// `["member","<64 hex>"],` serialized
const MEMBER_TAG_BYTES = 78
// id, pubkey, sig, kind, created_at, content, the `-` tag and the field names, with room to spare
const LIST_ENVELOPE_BYTES = 400

/**
 * How many members a 13534 names at most: the list must be an event this relay would accept from a client
 * (limits.maxEventTags, limits.maxEventBytes: 1,675 members by default). NIP-43: the list "should not be
 * considered exhaustive".
 */
export const listedMembersCap = (l: Pick<Limits, 'maxEventTags' | 'maxEventBytes'>): number =>
  Math.max(0, Math.min(l.maxEventTags - 1, Math.floor((l.maxEventBytes - LIST_ENVELOPE_BYTES) / MEMBER_TAG_BYTES)))

/** Admins first, then the roster's agents, then the allowed list, each once, at most `cap`. */
export function listedMembers(admins: readonly string[], agents: readonly string[], allowed: readonly string[], cap: number): string[] {
  return [...new Set([...admins, ...agents, ...allowed])].slice(0, cap)
}

/** Some filter may match a 13534, 8000 or 8001 (one without kinds may): only then does the reader's membership matter. */
export const mayAskForMemberLists = (filters: readonly Pick<Filter, 'kinds'>[]) =>
  filters.some((f) => f.kinds === undefined || f.kinds.some(isRelayMemberListKind))

/** A filter that names kind 28935: only such a REQ makes the relay mint an invite (a filter without kinds never does). */
export const asksForInvite = (filters: readonly Pick<Filter, 'kinds'>[]) => filters.some((f) => f.kinds?.includes(KIND_RELAY_INVITE))

/** Every filter asks for invites and nothing else: a refusal may then close the REQ instead of serving it without one. */
export const asksOnlyForInvite = (filters: readonly Pick<Filter, 'kinds'>[]) =>
  filters.length > 0 && filters.every((f) => f.kinds !== undefined && f.kinds.length > 0 && f.kinds.every((k) => k === KIND_RELAY_INVITE))
