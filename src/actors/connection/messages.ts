import type { OwnerAttestation } from '../../protocols/nip-oa.js'
import type { Reason } from '../../protocols/reasons.js'
import type { Result } from '../../protocols/result.js'

/** What a frame's preparation (beside the actor) found; applied in arrival order. */
export type Prepared =
  /** nothing stands in the way: apply it (hand it to the community, open the subscription ...) */
  | { kind: 'go' }
  /** refused before its turn (rate limit, ban, bad signature, auth required): the answer carries the reason */
  | { kind: 'refused'; reason: Reason }
  /** an AUTH's verdict: the attestation it carried, if any */
  | { kind: 'auth'; result: Result<OwnerAttestation | undefined> }

export type ConnectionMsg =
  /** one client frame; `bytes` is what it is charged against the connection's inbound bound (released when done) */
  | { type: 'Frame'; text: string; bytes: number }
  | { type: 'Prepared'; seq: number; result: Prepared }
  /** the community could not keep delivering to this subscription (a lost event): close it with a reason */
  | { type: 'SubscriptionLost'; subId: string; reason: Reason }
