import type { NostrEvent } from './nip01/event.js'
import { expirationOf } from './nip40.js'
import { reason } from './reasons.js'
import { err, ok, type Result } from './result.js'

/*
 * NIP-29 invite codes: a 9009 `create-invite` carries an arbitrary `code`, and a 9021 join request may carry
 * it back "to preauthorize acceptance". How many joins a code admits and until when are Apiary's: a `uses`
 * tag and the 9009's NIP-40 `expiration`.
 */

// NIP-29 puts the code in a URL (`naddr1...?invite=<code>`): a token, not a document.
export const MAX_INVITE_CODE_CHARS = 128
// A code for more joins than this is no invitation any more: an open channel says that better.
export const MAX_INVITE_USES = 10_000
// Each code is a row until it is spent and crowded out; an admin needs a handful outstanding, not thousands.
export const MAX_INVITES_PER_CHANNEL = 256

// Printable and without blanks, like a URL parameter; PostgreSQL text holds no NUL nor lone surrogates.
const CODE = new RegExp(`^[^\\p{C}\\p{Z}]{1,${MAX_INVITE_CODE_CHARS}}$`, 'u')

/** What a 9009 asks for. */
export interface InviteRequest {
  code: string
  /** joins it admits: 1 unless its `uses` tag says more */
  maxUses: number
  /** unix seconds, from the 9009's `expiration` tag (NIP-40); absent: never */
  expiresAt?: number
}

function parseCode(tag: readonly unknown[]): Result<string> {
  const code = tag[1]
  return typeof code === 'string' && CODE.test(code)
    ? ok(code)
    : err(reason('invalid', `an invite code is 1 to ${MAX_INVITE_CODE_CHARS} characters, without blanks or control characters`))
}

/** The one `code` tag of an event; undefined when it has none. */
function codeOf(event: Pick<NostrEvent, 'tags'>): Result<string | undefined> {
  const tags = event.tags.filter((t) => t[0] === 'code')
  if (tags.length === 0) return ok(undefined)
  if (tags.length > 1) return err(reason('invalid', 'one code tag at most'))
  return parseCode(tags[0] as string[])
}

/** A 9009: `["code", <code>]`, optional `["uses", "<n>"]` (single-use without it) and `["expiration", "<unix s>"]`. */
export function parseCreateInvite(event: Pick<NostrEvent, 'tags'>): Result<InviteRequest> {
  const code = codeOf(event)
  if (!code.ok) return code
  if (code.value === undefined) return err(reason('invalid', 'kind 9009 needs a code tag'))
  const uses = event.tags.filter((t) => t[0] === 'uses')
  let maxUses = 1
  if (uses.length > 0) {
    const n = uses.length === 1 && /^[1-9]\d{0,4}$/.test(uses[0]?.[1] ?? '') ? Number(uses[0]?.[1]) : 0
    if (n < 1 || n > MAX_INVITE_USES) return err(reason('invalid', `one uses tag, a whole number from 1 to ${MAX_INVITE_USES}`))
    maxUses = n
  }
  const expiresAt = expirationOf(event)
  if (expiresAt === undefined && event.tags.some((t) => t[0] === 'expiration'))
    return err(reason('invalid', 'the expiration tag must be unix seconds'))
  return ok({ code: code.value, maxUses, ...(expiresAt !== undefined && { expiresAt }) })
}

/** The invite code a 9021 carries, if any. */
export const joinCodeOf = (event: Pick<NostrEvent, 'tags'>): Result<string | undefined> => codeOf(event)
