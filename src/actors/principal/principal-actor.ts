// State: none beyond the limits it was activated with (the bucket lives in the gate backend, DESIGN §6).
// Messages: Admit (one EVENT or REQ/COUNT wants in).
// Crash policy: temporary with an idle stop — the next message re-activates it from the same inputs.
import type { Admission, RateLimiter, RateRule } from '../../infra/gates/rate-limit'
import { rateLimitKey } from '../../infra/redis/keys'
import type { ActorDef } from '../kernel'

export type LimitType = 'events' | 'reqs'
export type PrincipalTier = 'human' | 'agentStandard' | 'agentElevated' | 'agentPlatform'

/** 'unavailable': the gate backend failed; the caller fails closed. */
export type AdmissionAnswer = Admission | { allowed: false; unavailable: true }

export type PrincipalMsg = { type: 'Admit'; limit: LimitType; reply: (a: AdmissionAnswer) => void }

export interface PrincipalDeps {
  community: string
  /** a pubkey, or `ip:<addr>` for requests no signature has tied to a pubkey yet */
  principal: string
  tier: PrincipalTier
  rules: Record<LimitType, RateRule>
  limiter: RateLimiter
}

export const principalPath = (community: string, principal: string) => `principal/${community}/${principal}`

export function principalActor(deps: PrincipalDeps): ActorDef<null, PrincipalMsg> {
  return {
    kind: 'principal',
    init: () => null,
    // An idle principal costs memory for nothing; a minute covers a chatty client's pauses.
    idleStopMs: 60_000,
    policy: { mode: 'temporary' },
    handle: async (state, msg) => {
      try {
        msg.reply(await deps.limiter.admit(rateLimitKey(deps.community, deps.principal, msg.limit), deps.rules[msg.limit]))
      } catch {
        msg.reply({ allowed: false, unavailable: true })
      }
      return state
    },
  }
}
