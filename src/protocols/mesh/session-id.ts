// Mesh session ids: `<kind>:<id>`, e.g. `channel:general` for the owner of NIP-29 channel `general`.
// The id part uses the channel id charset (CHANNEL_ID), so every NIP-29 group id is a usable session id and a
// session id is one Redis key segment with no `{`, `}` or whitespace in it.
import { CHANNEL_ID } from '../nip29.js'

/** The kinds of state the mesh gives one owner. */
export const SESSION_KINDS = ['channel'] as const
export type SessionKind = (typeof SESSION_KINDS)[number]

export const SESSION_ID = new RegExp(`^(${SESSION_KINDS.join('|')}):${CHANNEL_ID.source.slice(1, -1)}$`)

/** The session that owns NIP-29 channel `channelId`'s moderation and relay-signed state. */
export function channelSessionId(channelId: string): string {
  if (!CHANNEL_ID.test(channelId)) throw new RangeError(`not a channel id: ${JSON.stringify(channelId.slice(0, 80))}`)
  return `channel:${channelId}`
}

/** The kind a session id names, or undefined for text that is not a session id. */
export function sessionKindOf(session: string): SessionKind | undefined {
  if (!SESSION_ID.test(session)) return undefined
  return session.slice(0, session.indexOf(':')) as SessionKind
}
