import type { NostrEvent } from './nip01/event.js'
import { reason } from './reasons.js'
import { err, OK_VOID, type Result } from './result.js'

/** NIP-70: a tag that is exactly `["-"]` marks an event only its author may publish. */
export const isProtected = (e: Pick<NostrEvent, 'tags'>): boolean => e.tags.some((t) => t.length === 1 && t[0] === '-')

/**
 * NIP-70: a protected event is accepted only from a connection authenticated as its author. `auth-required:`
 * even when another pubkey is authenticated: authenticating as the author is the fix.
 */
export function checkProtected(e: Pick<NostrEvent, 'tags' | 'pubkey'>, authedPubkeys: ReadonlySet<string>): Result<void> {
  if (!isProtected(e) || authedPubkeys.has(e.pubkey)) return OK_VOID
  return err(reason('auth-required', 'this event may only be published by its author'))
}
