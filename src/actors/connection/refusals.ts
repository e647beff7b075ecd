import type { Metrics } from '../../infra/metrics.js'
import { isAuthorOnlyKind } from '../../protocols/dm-access.js'
import { type Reason, reason } from '../../protocols/reasons.js'
import type { AdmissionAnswer, LimitType } from '../principal/principal-actor.js'

/** architecture §8: rejections carry the retry delay; a failed backend fails closed with its own text. */
export function admissionReason(a: Exclude<AdmissionAnswer, { allowed: true }>, metrics: Metrics, type: LimitType | 'auth'): Reason {
  if ('unavailable' in a) {
    metrics.admissionRejections.inc({ type, reason: 'unavailable' })
    return reason('rate-limited', 'admission unavailable')
  }
  metrics.admissionRejections.inc({ type, reason: 'limit' })
  const seconds = Number.isFinite(a.retryAfterMs) ? Math.max(1, Math.ceil(a.retryAfterMs / 1000)) : 60
  return reason('rate-limited', `retry in ${seconds}s`)
}

/** Every filter asks only for author-only kinds (NIP-42's example: DMs need AUTH first). */
export const isAuthorOnlyRequest = (filters: { kinds?: number[] }[]) =>
  filters.length > 0 && filters.every((f) => f.kinds !== undefined && f.kinds.length > 0 && f.kinds.every(isAuthorOnlyKind))
