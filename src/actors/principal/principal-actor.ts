// State: Admit requests waiting for the next gate call (the bucket itself lives in the gate backend, architecture §8).
// Messages: Admit (one EVENT or REQ/COUNT wants in), Flush (decide everything waiting in one gate call).
// Crash policy: temporary with an idle stop — the next message re-activates it from the same inputs.
import type { Admission, RateLimiter, RateRule } from '../../infra/gates/rate-limit.js'
import { type ActorDef, tell } from '../kernel/index.js'

export type LimitType = 'events' | 'reqs'
export type PrincipalTier = 'human' | 'agentStandard' | 'agentElevated' | 'agentPlatform'

/** 'unavailable': the gate backend failed; the caller fails closed. */
export type AdmissionAnswer = Admission | { allowed: false; unavailable: true }

type Admit = { type: 'Admit'; limit: LimitType; reply: (a: AdmissionAnswer) => void }
export type PrincipalMsg = Admit | { type: 'Flush' }

interface PrincipalState {
  pending: Admit[]
  flushQueued: boolean
}

export interface PrincipalDeps {
  community: string
  /** a pubkey, or `ip:<addr>` for requests no signature has tied to a pubkey yet */
  principal: string
  tier: PrincipalTier
  rules: Record<LimitType, RateRule>
  limiter: RateLimiter
  /** this node's own buckets, for reads only while `limiter` fails (see decide) */
  readFallback?: RateLimiter
}

export const principalPath = (community: string, principal: string) => `principal/${community}/${principal}`

/**
 * Coalescing: the Admits of one drain are decided together by one Flush (`admitMany`, which shares its script
 * calls with every other admit of that turn: redis-rate-limit.ts). The gate call runs beside the actor (it
 * needs no actor state, and each Admit carries its own reply), so the handler never waits on Redis and the
 * next drain's Admits go out at once. Two calls of one principal may then be decided out of order (ioredis
 * re-sends after NOSCRIPT or a cluster redirect): the budget stays exact, only which of two near-simultaneous
 * requests gets the last token can differ. What is in flight is bounded by the callers' asks (10 s each).
 */
export function principalActor(deps: PrincipalDeps): ActorDef<PrincipalState, PrincipalMsg> {
  return {
    kind: 'principal',
    init: () => ({ pending: [], flushQueued: false }),
    // An idle principal costs memory for nothing; a minute covers a chatty client's pauses.
    idleStopMs: 60_000,
    policy: { mode: 'temporary' },
    handle: (state, msg, ctx) => {
      if (msg.type === 'Admit') {
        state.pending.push(msg)
        if (!state.flushQueued) state.flushQueued = tell(ctx.self, { type: 'Flush' })
        return state
      }
      state.flushQueued = false
      // decide() answers every Admit itself, fallback included; should anything else throw, they fail closed
      // (an Admit's reply is an ask's: a second answer is ignored)
      const batch = state.pending.splice(0)
      decide(batch, deps).catch(() => {
        for (const a of batch) a.reply(UNAVAILABLE)
      })
      return state
    },
  }
}

const UNAVAILABLE = { allowed: false, unavailable: true } as const

async function decide(batch: Admit[], deps: PrincipalDeps): Promise<void> {
  if (batch.length === 0) return
  const budgetOf = (a: Admit) => ({ community: deps.community, principal: deps.principal, limit: a.limit })
  const requests = batch.map((a) => ({ key: deps.limiter.keyOf(budgetOf(a)), rule: deps.rules[a.limit] }))
  try {
    const answers = deps.limiter.admitMany
      ? await deps.limiter.admitMany(requests)
      : await Promise.all(requests.map((r) => deps.limiter.admit(r.key, r.rule)))
    for (const [i, a] of batch.entries()) a.reply(answers[i]!)
  } catch {
    // The gate backend failed: writes fail closed (architecture §8), but the node keeps serving reads from the
    // database (relay/backends.ts), still rate-limited, per node instead of cluster-wide, until Redis is back.
    for (const [i, a] of batch.entries()) {
      const fallback = a.limit === 'reqs' ? deps.readFallback : undefined
      a.reply(fallback ? await fallback.admit(fallback.keyOf(budgetOf(a)), requests[i]!.rule).catch(() => UNAVAILABLE) : UNAVAILABLE)
    }
  }
}
