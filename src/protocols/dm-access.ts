import type { NostrEvent } from './nip01/event.js'
import { KIND_DM, KIND_GIFT_WRAP } from './nip01/kinds.js'

/**
 * Kinds only the parties may read: NIP-04 DMs (4) and NIP-59 gift wraps (1059). A gift wrap's author is a
 * throwaway key, so in practice its reader is the `p`-tagged recipient.
 */
export const AUTHOR_ONLY_KINDS: readonly number[] = [KIND_DM, KIND_GIFT_WRAP]
export const isAuthorOnlyKind = (kind: number): boolean => kind === KIND_DM || kind === KIND_GIFT_WRAP

/** Whether a connection authenticated as `authedPubkeys` may receive this event. */
export function canRead(e: Pick<NostrEvent, 'kind' | 'pubkey' | 'tags'>, authedPubkeys: ReadonlySet<string>): boolean {
  return !isAuthorOnlyKind(e.kind) || isPartyTo(e, authedPubkeys)
}

/** One of `pubkeys` wrote the event or is `p`-tagged in it: the store's `authorOnly` rule, for live events. */
export function isPartyTo(e: Pick<NostrEvent, 'pubkey' | 'tags'>, pubkeys: ReadonlySet<string>): boolean {
  if (pubkeys.has(e.pubkey)) return true
  return e.tags.some((t) => t[0] === 'p' && t[1] !== undefined && pubkeys.has(t[1]))
}
