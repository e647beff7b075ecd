// Mesh session ids: `<kind>:<id>`, e.g. `channel:general` for the owner of NIP-29 channel `general`. The id
// part is the channel's segment (channel-segment.ts), so every channel id makes a session id, and a session
// id is one Redis key segment with no `:`, `{`, `}` or whitespace in it.
import { fromChannelSegment, toChannelSegment } from '../channel-segment.js'
import { isChannelId, MAX_CHANNEL_ID_CHARS } from '../nip29.js'

/** The kinds of state the mesh gives one owner. */
export const SESSION_KINDS = ['channel'] as const
export type SessionKind = (typeof SESSION_KINDS)[number]

// UTF-8 takes at most three bytes per UTF-16 code unit; each byte is one plain character or `%hh`
const MAX_SEGMENT_BYTES = 3 * MAX_CHANNEL_ID_CHARS
const SESSION_ID_SHAPE = new RegExp(`^(${SESSION_KINDS.join('|')}):(?:[a-z0-9_-]|%[0-9a-f]{2}){1,${MAX_SEGMENT_BYTES}}$`)
/** The longest session id, for schemas that bound text before they parse it. */
export const MAX_SESSION_ID_CHARS = Math.max(...SESSION_KINDS.map((k) => k.length)) + 1 + 3 * MAX_SEGMENT_BYTES

/** A session id exactly as channelSessionId spells one. */
export function isSessionId(session: string): boolean {
  return channelOfSession(session) !== undefined
}

/** The session that owns NIP-29 channel `channelId`'s moderation and relay-signed state. */
export function channelSessionId(channelId: string): string {
  if (!isChannelId(channelId)) throw new RangeError(`not a channel id: ${JSON.stringify(String(channelId).slice(0, 80))}`)
  return `channel:${toChannelSegment(channelId)}`
}

/** The channel a session id names, or undefined for text that is not a session id. */
export function channelOfSession(session: string): string | undefined {
  if (!SESSION_ID_SHAPE.test(session)) return undefined
  return fromChannelSegment(session.slice(session.indexOf(':') + 1))
}

/** The kind a session id names, or undefined for text that is not a session id. */
export function sessionKindOf(session: string): SessionKind | undefined {
  if (!isSessionId(session)) return undefined
  return session.slice(0, session.indexOf(':')) as SessionKind
}
