import type { OwnerAttestation } from '../../protocols/nip-oa.js'
import type { Reason } from '../../protocols/reasons.js'
import type { Result } from '../../protocols/result.js'

/** What an accepted AUTH makes of its pubkey (auth-standing.ts). */
export interface AuthStanding {
  /** the owner attestation it carried, if any: its owner's ban covers the key, its `kind=` clauses bind its writes */
  attestation?: OwnerAttestation
  /** the attestation's owner is known to the community: the key is an agent of at least the agent-standard tier */
  lifted: boolean
  /** neither the key nor its owner is known to the community: its first writes also spend its IP's budget */
  fresh: boolean
}

/** What a frame's preparation (beside the actor) found; applied in arrival order. */
export type Prepared =
  /** nothing stands in the way: apply it (hand it to the community, open the subscription ...) */
  | { kind: 'go' }
  /** refused before its turn (rate limit, ban, bad signature, auth required): the answer carries the reason */
  | { kind: 'refused'; reason: Reason }
  /** an AUTH's verdict: what the pubkey is to the community */
  | { kind: 'auth'; result: Result<AuthStanding> }

export type ConnectionMsg =
  /** one client frame; `bytes` is what it is charged against the connection's inbound bound (released when done) */
  | { type: 'Frame'; text: string; bytes: number }
  | { type: 'Prepared'; seq: number; result: Prepared }
  /** the community could not keep delivering to this subscription (a lost event): close it with a reason */
  | { type: 'SubscriptionLost'; subId: string; reason: Reason }
