// A NIP-29 channel id as one segment of a name that other programs split or match: a Redis key or pub/sub
// channel (`apiary:{c}:ev:<segment>`), a mesh session id (`channel:<segment>`). An id may hold `:`, `{`, `*`,
// `/`, `%` or capitals, which there would end a segment, move the hash slot, glob, or alias another id; so each
// UTF-8 byte outside a-z 0-9 - _ is written `%hh` (lower-case hex). An id of a-z 0-9 - _ only, as every id was
// before the rule widened, is its own segment: the keys of existing channels do not change.
import { isChannelId } from './nip29.js'

const PLAIN = /^[a-z0-9_-]$/
const SEGMENT = /^(?:[a-z0-9_-]|%[0-9a-f]{2})+$/
const encoder = new TextEncoder()

/** The segment of channel id `id` (one the caller has checked with isChannelId). */
export function toChannelSegment(id: string): string {
  return toSegment(id)
}

/** The channel id a segment spells; undefined for text toChannelSegment could not have produced. */
export function fromChannelSegment(segment: string): string | undefined {
  return fromSegment(segment, isChannelId)
}

/** Any name as one segment, by the same rule (a job capability in a mesh session id, too). */
export function toSegment(id: string): string {
  let out = ''
  for (const ch of id) {
    if (PLAIN.test(ch)) out += ch
    else for (const byte of encoder.encode(ch)) out += `%${byte.toString(16).padStart(2, '0')}`
  }
  return out
}

/** The name a segment spells, when `isName` accepts it; undefined for text toSegment could not have produced. */
export function fromSegment(segment: string, isName: (id: string) => boolean): string | undefined {
  if (!SEGMENT.test(segment)) return undefined
  let id: string
  try {
    id = decodeURIComponent(segment)
  } catch {
    return undefined
  }
  // one spelling per id: `%61` for `a`, or `%C3` for `%c3`, would alias the id's own segment
  return isName(id) && toSegment(id) === segment ? id : undefined
}
