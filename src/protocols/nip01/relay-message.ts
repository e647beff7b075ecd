import type { Reason } from '../reasons.js'

/**
 * Relay → client frames (NIP-01, NIP-42, NIP-45). The only module that turns reasons into wire frames.
 * Every string goes through JSON.stringify, so client-chosen ids cannot break out of their slot.
 */

/**
 * `raw` is the stored toRawEvent string: concatenated, never re-stringified, so one accepted event costs one
 * serialization however many subscribers receive it (docs/architecture.md §6.6).
 */
export const eventFrame = (subId: string, raw: string): string => '["EVENT",' + JSON.stringify(subId) + ',' + raw + ']'

/** NIP-01: accepted with '' or e.g. 'duplicate: ...'; refused always with a prefixed reason. */
export const okFrame = (eventId: string, accepted: boolean, message: Reason | ''): string =>
  JSON.stringify(['OK', eventId, accepted, message])

export const eoseFrame = (subId: string): string => JSON.stringify(['EOSE', subId])

export const closedFrame = (subId: string, reason: Reason): string => JSON.stringify(['CLOSED', subId, reason])

export const noticeFrame = (message: string): string => JSON.stringify(['NOTICE', message])

export const authFrame = (challenge: string): string => JSON.stringify(['AUTH', challenge])

/** NIP-45 */
export const countFrame = (subId: string, count: number): string => JSON.stringify(['COUNT', subId, { count }])
