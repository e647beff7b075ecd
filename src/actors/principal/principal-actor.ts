// State: Admit requests waiting for the next gate call (the bucket itself lives in the gate backend, architecture §8).
// Messages: Admit (one request wants in, naming its limit), Flush (decide everything waiting in one gate call).
// Crash policy: temporary with an idle stop — the next message re-activates it from the same inputs.
import type { Admission, Budget, RateLimiter, RateRule } from '../../infra/gates/rate-limit.js'
import { type ActorDef, tell } from '../kernel/index.js'

/** What a connection's frames are charged to: EVENTs, and REQ/COUNT/AUTH. */
export type LimitType = 'events' | 'reqs'
/** A principal's budgets in one community: its frames and its NIP-86 calls. */
export type CommunityLimit = LimitType | 'api'
/** An IP's budgets across the node's communities: new sockets, and NIP-86 calls and AUTHs before their signature is checked. */
export type IpLimit = 'conn' | 'api' | 'auth'
export type PrincipalTier = 'human' | 'agentStandard' | 'agentElevated' | 'agentPlatform'

/** 'unavailable': the gate backend failed and this limit does not fall back; the caller fails closed. */
export type AdmissionAnswer = Admission | { allowed: false; unavailable: true }

/** `rule`: the principal's rule for `limit` as of this request (its tier now: a roster change applies at once) */
type Admit<L extends string> = { type: 'Admit'; limit: L; rule: RateRule; cost?: number; reply: (a: AdmissionAnswer) => void }
/** tokens taken after the fact for work the principal already caused (a read stopped over its budget); no answer */
type Charge<L extends string> = { type: 'Charge'; limit: L; rule: RateRule; cost: number }
export type PrincipalMsg<L extends string = CommunityLimit> = Admit<L> | Charge<L> | { type: 'Flush' }

interface PrincipalState<L extends string> {
  pending: Admit<L>[]
  flushQueued: boolean
}

/** A principal in one community. */
export interface PrincipalDeps {
  community: string
  /** a pubkey, or ipPrincipalOf(ip) for requests no signature has tied to a pubkey yet */
  principal: string
  limiter: RateLimiter
  /** this node's own buckets, for the limits that fall back while `limiter` fails (see decide) */
  readFallback?: RateLimiter
}

/** An IP across the node, before any community is resolved or any signature checked. */
export interface IpPrincipalDeps {
  /** what the IP is charged as: the address the edge resolved (client-ip.ts principalOf) */
  ip: string
  limiter: RateLimiter
  readFallback?: RateLimiter
}

/**
 * The principal an IP's requests are charged as, in a community and node-wide. The edge resolved `ip` already
 * (client-ip.ts: trustedProxies, then principalOf, so an IPv6 client is its ipv6PrefixLength network).
 */
export const ipPrincipalOf = (ip: string): string => `ip:${ip}`

export const principalPath = (community: string, principal: string) => `principal/${community}/${principal}`
// `_` can't begin a community id ([a-z0-9][a-z0-9-]{0,62}), so the node-wide scope never shares a path with one.
const NODE_SCOPE = '_node'
export const ipPrincipalPath = (ip: string) => principalPath(NODE_SCOPE, ipPrincipalOf(ip))

// architecture §8, per limit, while the shared gate fails: writes (events) and NIP-86 calls (api: 503) fail
// closed; reads, AUTHs and new sockets fall back to this node's buckets, so a node keeps serving reads until Redis returns.
const FALLS_BACK: Record<CommunityLimit | IpLimit, boolean> = { events: false, api: false, reqs: true, conn: true, auth: true }

export function principalActor(deps: PrincipalDeps): ActorDef<PrincipalState<CommunityLimit>, PrincipalMsg<CommunityLimit>> {
  const { community, principal } = deps
  return coalescingActor({ ...deps, budgetOf: (limit) => ({ community, principal, limit }) })
}

export function ipPrincipalActor(deps: IpPrincipalDeps): ActorDef<PrincipalState<IpLimit>, PrincipalMsg<IpLimit>> {
  return coalescingActor({ ...deps, budgetOf: (limit) => ({ ip: deps.ip, limit }) })
}

interface Charging<L extends CommunityLimit | IpLimit> {
  /** whose bucket an Admit for `limit` takes from; the limiter names its key (keyOf) */
  budgetOf(limit: L): Budget
  limiter: RateLimiter
  readFallback?: RateLimiter
}

/**
 * Coalescing: the Admits of one drain are decided together by one Flush (`admitMany`, which shares its script
 * calls with every other admit of that turn: redis-rate-limit.ts). The gate call runs beside the actor (it
 * needs no actor state, and each Admit carries its own reply), so the handler never waits on Redis and the
 * next drain's Admits go out at once. Two calls of one principal may then be decided out of order (ioredis
 * re-sends after NOSCRIPT or a cluster redirect): the budget stays exact, only which of two near-simultaneous
 * requests gets the last token can differ. What is in flight is bounded by the callers' asks (10 s each).
 */
function coalescingActor<L extends CommunityLimit | IpLimit>(c: Charging<L>): ActorDef<PrincipalState<L>, PrincipalMsg<L>> {
  return {
    kind: 'principal',
    init: () => ({ pending: [], flushQueued: false }),
    // An idle principal costs memory for nothing; a minute covers a chatty client's pauses.
    idleStopMs: 60_000,
    policy: { mode: 'temporary' },
    handle: (state, msg, ctx) => {
      if (msg.type === 'Admit' || msg.type === 'Charge') {
        if (msg.type === 'Admit') state.pending.push(msg)
        // a charge takes what the bucket holds, up to its cost, token by token: one Admit of the whole cost
        // would be refused whole (taking nothing) whenever the bucket holds less
        else for (let i = 0; i < msg.cost; i++) state.pending.push({ type: 'Admit', limit: msg.limit, rule: msg.rule, reply: () => {} })
        if (!state.flushQueued) state.flushQueued = tell(ctx.self, { type: 'Flush' })
        return state
      }
      state.flushQueued = false
      // decide() answers every Admit itself, fallback included; should anything else throw, they fail closed
      // (an Admit's reply is an ask's: a second answer is ignored)
      const batch = state.pending.splice(0)
      decide(batch, c).catch(() => {
        for (const a of batch) a.reply(UNAVAILABLE)
      })
      return state
    },
  }
}

const UNAVAILABLE = { allowed: false, unavailable: true } as const

async function decide<L extends CommunityLimit | IpLimit>(batch: Admit<L>[], c: Charging<L>): Promise<void> {
  if (batch.length === 0) return
  const requests = batch.map((a) => ({ key: c.limiter.keyOf(c.budgetOf(a.limit)), rule: a.rule, cost: a.cost }))
  try {
    const answers = c.limiter.admitMany
      ? await c.limiter.admitMany(requests)
      : await Promise.all(requests.map((r) => c.limiter.admit(r.key, r.rule, r.cost)))
    for (const [i, a] of batch.entries()) a.reply(answers[i]!)
  } catch {
    // The gate backend failed: what falls back is limited per node instead of cluster-wide until Redis is back
    // (the database still serves reads: relay/backends.ts); the rest fails closed.
    for (const [i, a] of batch.entries()) {
      const fallback = FALLS_BACK[a.limit] ? c.readFallback : undefined
      a.reply(
        fallback
          ? await fallback.admit(fallback.keyOf(c.budgetOf(a.limit)), requests[i]!.rule, a.cost).catch(() => UNAVAILABLE)
          : UNAVAILABLE,
      )
    }
  }
}
