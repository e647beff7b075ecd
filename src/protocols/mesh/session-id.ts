// Mesh session ids: `<kind>:<id>`, e.g. `channel:general` for the owner of NIP-29 channel `general`, and
// `capability:summarize` for the owner of capability `summarize`'s job dispatcher. The id part is the name as one
// segment (channel-segment.ts), so every channel id and capability name makes a session id, and a session id is
// one Redis key segment with no `:`, `{`, `}` or whitespace in it.
import { fromSegment, toSegment } from '../channel-segment.js'
import { isCapabilityName, MAX_CAPABILITY_CHARS } from '../jobs.js'
import { isChannelId, MAX_CHANNEL_ID_CHARS } from '../nip29.js'

/** The kinds of state the mesh gives one owner. */
export const SESSION_KINDS = ['channel', 'capability'] as const
export type SessionKind = (typeof SESSION_KINDS)[number]

const NAMES: Record<SessionKind, { valid: (name: string) => boolean; maxChars: number }> = {
  channel: { valid: isChannelId, maxChars: MAX_CHANNEL_ID_CHARS },
  capability: { valid: isCapabilityName, maxChars: MAX_CAPABILITY_CHARS },
}

// UTF-8 takes at most three bytes per UTF-16 code unit; each byte is one plain character or `%hh`
const shapeOf = (kind: SessionKind) => new RegExp(`^${kind}:(?:[a-z0-9_-]|%[0-9a-f]{2}){1,${3 * NAMES[kind].maxChars}}$`)
const SHAPES = new Map(SESSION_KINDS.map((k) => [k, shapeOf(k)]))
/** The longest session id, for schemas that bound text before they parse it. */
export const MAX_SESSION_ID_CHARS = Math.max(...SESSION_KINDS.map((k) => k.length + 1 + 3 * 3 * NAMES[k].maxChars))

/** A session id exactly as channelSessionId or capabilitySessionId spells one. */
export function isSessionId(session: string): boolean {
  return parseSessionId(session) !== undefined
}

/** The session that owns NIP-29 channel `channelId`'s moderation and relay-signed state. */
export function channelSessionId(channelId: string): string {
  if (!isChannelId(channelId)) throw new RangeError(`not a channel id: ${JSON.stringify(String(channelId).slice(0, 80))}`)
  return `channel:${toSegment(channelId)}`
}

/** The session that owns capability `name`'s job dispatcher in a community (docs/jobs.md). */
export function capabilitySessionId(name: string): string {
  if (!isCapabilityName(name)) throw new RangeError(`not a capability name: ${JSON.stringify(String(name).slice(0, 80))}`)
  return `capability:${toSegment(name)}`
}

/** The channel a session id names, or undefined for text that is not a channel's session id. */
export function channelOfSession(session: string): string | undefined {
  const parsed = parseSessionId(session)
  return parsed?.kind === 'channel' ? parsed.name : undefined
}

/** The capability a session id names, or undefined for text that is not a capability's session id. */
export function capabilityOfSession(session: string): string | undefined {
  const parsed = parseSessionId(session)
  return parsed?.kind === 'capability' ? parsed.name : undefined
}

/** The kind a session id names, or undefined for text that is not a session id. */
export function sessionKindOf(session: string): SessionKind | undefined {
  return parseSessionId(session)?.kind
}

function parseSessionId(session: string): { kind: SessionKind; name: string } | undefined {
  const kind = session.slice(0, session.indexOf(':')) as SessionKind
  const shape = SHAPES.get(kind)
  if (shape === undefined || !shape.test(session)) return undefined
  const name = fromSegment(session.slice(kind.length + 1), NAMES[kind].valid)
  return name === undefined ? undefined : { kind, name }
}
