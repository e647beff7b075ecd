// Admission (architecture §8), part of the composition root: the one place that maps a budget to the principal
// actor charged for it and asks that actor, with the rule its tier gives it now. A principal in a community
// (its frames and NIP-86 calls) or an IP across the node (new sockets, NIP-86 calls before their
// signature is checked); every actor coalesces its gate calls.
import { ask, type Kernel, tell } from '../actors/kernel/index.js'
import {
  type AdmissionAnswer,
  type CommunityLimit,
  type IpLimit,
  ipPrincipalActor,
  ipPrincipalPath,
  type LimitType,
  type PrincipalMsg,
  principalActor,
  principalPath,
} from '../actors/principal/principal-actor.js'
import type { Config } from '../infra/config.js'
import { type Admission, GateError, type RateLimiter, type RateRule } from '../infra/gates/rate-limit.js'
import type { Tenants } from '../infra/http/tenants.js'
import type { CommunityRecord, CommunityStore } from '../infra/store/community-store.js'
import { tierOf } from './relay-info.js'

export type Admit = (record: CommunityRecord, principal: string, limit: LimitType, attested: boolean) => Promise<AdmissionAnswer>

export interface Admissions {
  /** a connection's EVENT (`events`) or REQ/COUNT/AUTH (`reqs`) */
  admit: Admit
  /** a new socket from `ip` (rateLimits.connectionsPerIp); falls back to this node's buckets while the gate fails */
  admitConnection(ip: string): Promise<AdmissionAnswer>
  /** a NIP-86 call against `pubkey`'s `api` budget in this community; rejects when the gate fails */
  admitApi(record: CommunityRecord, pubkey: string): Promise<Admission>
  /** a NIP-86 call from `ip` (rateLimits.apiPerIp), before any signature check; rejects when the gate fails */
  admitApiIp(ip: string): Promise<Admission>
  /** an AUTH from `ip` (rateLimits.authPerIp), before its signature check; falls back to this node's buckets while the gate fails */
  admitAuth(ip: string): Promise<AdmissionAnswer>
  /** takes tokens from a principal's `reqs` budget for a read it caused that was stopped over its read budget */
  chargeRead(record: CommunityRecord, principal: string, attested: boolean, rowsExamined: number): void
}

/** A read stopped over its budget costs its principal one REQ per this many rows it examined, on top of its REQ. */
const ROWS_PER_REQ_TOKEN = 1_000

export interface AdmissionDeps {
  kernel: Kernel
  config: Config
  tenants: Tenants
  limiter: RateLimiter
  /** this node's own buckets, for reads and new sockets while the shared limiter is down */
  readFallback: RateLimiter
}

// a caller never waits longer than this for its principal, however slow the gate backend
const ASK_TIMEOUT_MS = 10_000

export function createAdmission(d: AdmissionDeps): Admissions {
  const { kernel, config, limiter, readFallback } = d

  // async: a spawn refused during shutdown is a rejection like any other, never a synchronous throw
  async function askPrincipal(record: CommunityRecord, principal: string, limit: CommunityLimit, attested: boolean) {
    const ref = kernel.getOrSpawn(
      principalPath(record.id, principal),
      principalActor({ community: record.id, principal, limiter, readFallback }),
    )
    const rule = ruleOf(record, principal, limit, attested)
    return ask<PrincipalMsg<CommunityLimit>, AdmissionAnswer>(ref, (reply) => ({ type: 'Admit', limit, rule, reply }), ASK_TIMEOUT_MS)
  }

  /** The rule as of this request: the roster as of the latest reconcile (setagenttier changes it), and this connection's attestation. */
  function ruleOf(record: CommunityRecord, principal: string, limit: CommunityLimit, attested: boolean): RateRule {
    const rostered = tierOf(d.tenants.byId(record.id) ?? record, principal)
    // attestation belongs to a connection; a NIP-86 call has none, so its budget is the rostered tier's
    if (limit === 'api') return config.rateLimits[rostered].api
    // an agent by owner attestation is at least agent-standard
    const tier = rostered === 'human' && attested ? 'agentStandard' : rostered
    return config.rateLimits[tier][limit]
  }

  async function askIp(ip: string, limit: IpLimit) {
    const ref = kernel.getOrSpawn(ipPrincipalPath(ip), ipPrincipalActor({ ip, limiter, readFallback }))
    const rule = { conn: config.rateLimits.connectionsPerIp, api: config.rateLimits.apiPerIp, auth: config.rateLimits.authPerIp }[limit]
    return ask<PrincipalMsg<IpLimit>, AdmissionAnswer>(ref, (reply) => ({ type: 'Admit', limit, rule, reply }), ASK_TIMEOUT_MS)
  }

  function chargeRead(record: CommunityRecord, principal: string, attested: boolean, rowsExamined: number): void {
    const ref = kernel.getOrSpawn(
      principalPath(record.id, principal),
      principalActor({ community: record.id, principal, limiter, readFallback }),
    )
    const rule = ruleOf(record, principal, 'reqs', attested)
    // at most one burst: one costly read empties the bucket, it does not lock the reader out for longer
    const cost = Math.min(rule.burst, Math.max(1, Math.ceil(rowsExamined / ROWS_PER_REQ_TOKEN)))
    tell(ref, { type: 'Charge', limit: 'reqs', rule, cost })
  }

  return {
    chargeRead,
    admit: askPrincipal,
    admitConnection: (ip) => askIp(ip, 'conn'),
    admitApi: (record, pubkey) => askPrincipal(record, pubkey, 'api', false).then(failClosed),
    admitApiIp: (ip) => askIp(ip, 'api').then(failClosed),
    admitAuth: (ip) => askIp(ip, 'auth'),
  }
}

/** NIP-86 answers a gate it can't reach with 503 (endpoint.ts): the answer becomes the rejection it expects. */
function failClosed(a: AdmissionAnswer): Admission {
  if ('unavailable' in a) throw new GateError('rate limiter unavailable')
  return a
}

/**
 * Who a community knows, for the tier an owner attestation lifts to and for the keys whose first writes
 * also spend their IP's budget (auth-standing.ts): its admins and roster as of the latest reconcile, and its
 * allowed list (NIP-86 allowpubkey), read from the store only for the pubkeys the record does not name.
 */
/** Whether the community's current record names `pubkey`: an admin or an agent of its roster (held in memory). */
export function isNamedBy(tenants: Tenants, community: string, pubkey: string): boolean {
  const record = tenants.byId(community)
  return record !== undefined && (record.admins.includes(pubkey) || record.agents.some((a) => a.pubkey === pubkey))
}

export function createKnownLookup(tenants: Tenants, store: Pick<CommunityStore, 'allowedAmong'>) {
  return async (community: string, pubkeys: readonly string[]): Promise<Set<string>> => {
    const known = new Set(pubkeys.filter((p) => isNamedBy(tenants, community, p)))
    const rest = pubkeys.filter((p) => !known.has(p))
    if (rest.length > 0) for (const p of await store.allowedAmong(community, rest)) known.add(p)
    return known
  }
}
