// The answers a write gets at more than one step of its way (checks, commit, give-up), defined once.
import { reason } from '../../protocols/reasons.js'
import type { ChannelPlan } from './community-channels.js'
import type { PublishOutcome } from './messages.js'

export const DUPLICATE = reason('duplicate', 'already have this event')
export const NOT_PROCESSED = reason('error', 'could not process the event')
export const NOT_STORED = reason('error', 'could not store the event')
export const PRESENCE_NOT_RECORDED = reason('error', 'could not record presence')

/** Answers `OK false` with `message` and hands the state back, so a handler can end with it. */
export function refuse<S>(state: S, reply: ((o: PublishOutcome) => void) | undefined, message: PublishOutcome['message']): S {
  reply?.({ accepted: false, message } as PublishOutcome)
  return state
}

/**
 * What the writer of a stored event hears: OK true, or for a join request that waits for an admin (a `queue`
 * verdict) OK false with its reason, though the event is stored for the admins to read.
 */
export function storedAnswer(plan: ChannelPlan | undefined): PublishOutcome {
  return plan?.verdict.effect === 'queue' ? { accepted: false, message: plan.verdict.answer } : { accepted: true, message: '' }
}
