// Phase one of the handshake: the relay's NIP-11 document says whether it can host an agent at all, and how
// long the registry keeps a lease.
import { isHex64 } from '../../protocols/ids.js'
import { AgentError } from './error.js'

/** What the agent needs: NIP-01, and NIP-42 because presence must be AUTHed as its author (docs/presence.md). */
export const REQUIRED_NIPS = [1, 42] as const

/** the registry's lease when the relay advertises none (three of the default 15 s heartbeats: the lease outlives two lost ones) */
export const DEFAULT_LEASE_SECONDS = 45

export interface RelayProbe {
  url: string
  supportedNips: number[]
  leaseSeconds: number
  /** NIP-11 `limitation.default_limit`/`max_limit`: what a filter without / with a `limit` gets back at most */
  defaultLimit?: number
  maxLimit?: number
  /** NIP-11 `self`: the community's key, which signs the relay's job assignments and terminal job errors */
  self?: string
}

/** ws://h/p → http://h/p, wss → https (NIP-11 is served on the same URL). */
export const toHttpUrl = (wsUrl: string): string => wsUrl.replace(/^ws/i, 'http')

/**
 * Resolves the probe; rejects AgentError('incompatible') only for a well-formed NIP-11 document that lacks a
 * NIP the agent needs. A failed fetch or a body that is cut off, times out or is not a JSON object throws a
 * plain Error: a failed discovery round, retried (a restarting relay or a proxy hiccup is not a verdict).
 */
export async function probeRelay(url: string, fetchFn: typeof fetch, timeoutMs: number): Promise<RelayProbe> {
  const res = await fetchFn(toHttpUrl(url), { headers: { Accept: 'application/nostr+json' }, signal: AbortSignal.timeout(timeoutMs) })
  if (!res.ok) throw new Error(`NIP-11 at ${url} answered HTTP ${res.status}`)
  let doc: unknown
  try {
    doc = await res.json()
  } catch (cause) {
    throw new Error(`${url} did not answer a whole NIP-11 document (application/nostr+json): ${(cause as Error).message}`, { cause })
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw new Error(`${url} answered NIP-11 with something other than a JSON object`)
  return toProbe(url, doc)
}

export function toProbe(url: string, doc: unknown): RelayProbe {
  const info = (typeof doc === 'object' && doc !== null ? doc : {}) as Record<string, unknown>
  const nips = Array.isArray(info.supported_nips) ? info.supported_nips.filter((n): n is number => typeof n === 'number') : []
  const missing = REQUIRED_NIPS.filter((n) => !nips.includes(n))
  if (missing.length > 0) {
    throw new AgentError(
      'incompatible',
      `${url} does not support NIP-${missing.join(', NIP-')} (its NIP-11 supported_nips: [${nips.join(', ')}]); an agent needs NIP-01 and NIP-42 AUTH`,
    )
  }
  const self = typeof info.self === 'string' && isHex64(info.self) ? info.self : undefined
  return { url, supportedNips: nips, leaseSeconds: leaseSecondsOf(info), ...queryLimitsOf(info), ...(self !== undefined && { self }) }
}

/** NIP-11 `limitation.default_limit` and `max_limit`, each left out when the relay does not advertise it. */
export function queryLimitsOf(info: Record<string, unknown>): { defaultLimit?: number; maxLimit?: number } {
  const limitation = (typeof info.limitation === 'object' && info.limitation !== null ? info.limitation : {}) as Record<string, unknown>
  const positive = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined)
  const defaultLimit = positive(limitation.default_limit)
  const maxLimit = positive(limitation.max_limit)
  return { ...(defaultLimit !== undefined && { defaultLimit }), ...(maxLimit !== undefined && { maxLimit }) }
}

/** NIP-11 `apiary.presence.lease_seconds`, else 3 × `heartbeat_seconds`, else the default. */
export function leaseSecondsOf(info: Record<string, unknown>): number {
  const apiary = info.apiary as { presence?: { lease_seconds?: unknown; heartbeat_seconds?: unknown } } | undefined
  const lease = apiary?.presence?.lease_seconds
  if (typeof lease === 'number' && lease > 0) return lease
  const heartbeat = apiary?.presence?.heartbeat_seconds
  if (typeof heartbeat === 'number' && heartbeat > 0) return 3 * heartbeat
  return DEFAULT_LEASE_SECONDS
}
