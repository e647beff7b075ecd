// Admission (architecture §8), part of the composition root: one principal actor per (community, principal) that
// coalesces its gate calls, with the tier the community's roster gives it.
import { ask, type Kernel } from '../actors/kernel/index.js'
import { type AdmissionAnswer, type LimitType, principalActor, principalPath } from '../actors/principal/principal-actor.js'
import type { Config } from '../infra/config.js'
import type { RateLimiter } from '../infra/gates/rate-limit.js'
import type { Tenants } from '../infra/http/tenants.js'
import type { CommunityRecord } from '../infra/store/community-store.js'
import { tierOf } from './relay-info.js'

export type Admit = (record: CommunityRecord, principal: string, limit: LimitType, attested: boolean) => Promise<AdmissionAnswer>

export interface AdmissionDeps {
  kernel: Kernel
  config: Config
  tenants: Tenants
  limiter: RateLimiter
  /** this node's own buckets, for reads while the shared limiter is down */
  readFallback: RateLimiter
}

export function createAdmission(d: AdmissionDeps): Admit {
  return (record, principal, limit, attested) => {
    // the roster as of the latest reconcile, not as of the socket's upgrade (setagenttier changes it)
    const rostered = tierOf(d.tenants.byId(record.id) ?? record, principal)
    // an agent by owner attestation is at least agent-standard (its principal actor keeps the tier it got first)
    const tier = rostered === 'human' && attested ? 'agentStandard' : rostered
    const ref = d.kernel.getOrSpawn(
      principalPath(record.id, principal),
      principalActor({
        community: record.id,
        principal,
        tier,
        rules: d.config.rateLimits[tier],
        limiter: d.limiter,
        readFallback: d.readFallback,
      }),
    )
    return ask(ref, (reply) => ({ type: 'Admit', limit, reply }), 10_000)
  }
}
