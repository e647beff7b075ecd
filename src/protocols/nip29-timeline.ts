import type { NostrEvent } from './nip01/event.js'
import { isManagementKind } from './nip29.js'
import { reason } from './reasons.js'
import { err, OK_VOID, ok, type Result } from './result.js'

/*
 * NIP-29's guards against a channel's events being used out of context: timeline references (`previous`) must
 * name events this relay holds among the channel's latest, and events may not be published late. Pure: the
 * community reads the channel's latest ids (channel-reads.ts) and brings the clock.
 */

/** NIP-29: a reference is "the first 8 characters (4 bytes)" of an event id. */
const PREVIOUS_REF = /^[0-9a-f]{8}$/
/**
 * References one event may carry. NIP-29 recommends at least 3 (clients send 3 to 6); each names one of the
 * channel's last 50 events, so more than 50 cannot all name different ones.
 */
export const MAX_PREVIOUS_REFS = 50

/** How old a channel event may be when it arrives (NIP-29 "Late publication"), seconds. */
export interface LatePublication {
  /** 9000–9022: moderation, group state and the join and leave requests */
  maxModerationAgeSeconds: number
  /** any other event sent to a channel; 0: no bound but the relay's created_at window */
  maxPostAgeSeconds: number
}

/**
 * The `previous` references of a channel event: every value of every `previous` tag (clients write one tag
 * of several values, or a tag per value). Empty when it has none: NIP-29 lets them be zero.
 */
export function parsePrevious(event: Pick<NostrEvent, 'tags'>): Result<string[]> {
  const refs: string[] = []
  for (const t of event.tags) {
    if (t[0] !== 'previous') continue
    for (const v of t.slice(1)) {
      if (refs.length === MAX_PREVIOUS_REFS) return err(reason('invalid', `at most ${MAX_PREVIOUS_REFS} previous references`))
      if (typeof v !== 'string' || !PREVIOUS_REF.test(v))
        return err(reason('invalid', `previous reference ${JSON.stringify(String(v).slice(0, 16))} is not 8 lowercase hex characters`))
      refs.push(v)
    }
  }
  return ok(refs)
}

/** The first 8 characters of each id: what a `previous` reference names. */
export const toPreviousRefs = (ids: readonly string[]): ReadonlySet<string> => new Set(ids.map((id) => id.slice(0, 8)))

/**
 * NIP-29: "relays are expected to reject any events that contain timeline references to events not found in
 * their own database". `known`: the references of the channel's latest events here (toPreviousRefs).
 */
export function checkPrevious(refs: readonly string[], known: ReadonlySet<string>): Result<void> {
  for (const r of refs) {
    if (!known.has(r)) return err(reason('invalid', `unknown previous reference ${r}: not among this channel's latest events here`))
  }
  return OK_VOID
}

/**
 * NIP-29: relays "should prevent late publication (messages published now with a timestamp from days or even
 * hours ago)". A channel change signed long ago and sent now would act for someone who did not ask now.
 */
export function checkLatePublication(event: Pick<NostrEvent, 'kind' | 'created_at'>, nowSeconds: number, w: LatePublication): Result<void> {
  const age = nowSeconds - event.created_at
  if (isManagementKind(event.kind)) {
    return age > w.maxModerationAgeSeconds
      ? err(
          reason('invalid', `kind ${event.kind} is dated ${age} s ago; channel changes must be at most ${w.maxModerationAgeSeconds} s old`),
        )
      : OK_VOID
  }
  return w.maxPostAgeSeconds > 0 && age > w.maxPostAgeSeconds
    ? err(reason('invalid', `event is dated ${age} s ago; events sent to a channel must be at most ${w.maxPostAgeSeconds} s old`))
    : OK_VOID
}
