// AgentClient options: every default with its unit and where it came from, validated once in the constructor.
import { isIP } from 'node:net'
import { schnorr } from '@noble/curves/secp256k1.js'
import { hexToBytes } from '@noble/hashes/utils.js'
import { isHex64IgnoringCase } from '../../protocols/ids.js'
import { type SigningKey, toSigningKey } from '../../protocols/nip01/sign.js'
import { type AgentClock, type RandomSource, systemClock } from './clock.js'
import { AgentError } from './error.js'
import type { InboundLimitOptions } from './inbound-limits.js'
import type { ThrottleRules } from './throttle.js'

export interface Capability {
  name: string
  /** the event kinds this capability handles (NIP-89 `k` tags) */
  kinds: number[]
  description?: string
}

export interface AgentClientOptions {
  /** ws(s) URLs; the agent holds one connection at a time, to the first compatible relay, in this order */
  relays: string[]
  /** 64 hex characters, or 32 bytes */
  secretKey: string | Uint8Array
  capabilities: Capability[]
  version?: string
  heartbeatSeconds?: number
  leaseSeconds?: number
  sessionSeconds?: number
  reconnect?: { minMs?: number; maxMs?: number; jitter?: number; stableMs?: number }
  /** failed discovery rounds at first start before start() rejects with 'discovery-failed' */
  maxDiscoveryRounds?: number
  resumeOverlapSeconds?: number
  maxWaitMs?: number
  throttle?: Partial<ThrottleRules>
  retry?: { maxAttempts?: number; minMs?: number; maxMs?: number; jitter?: number }
  okTimeoutMs?: number
  /** any one handshake step (NIP-11, open, challenge, OK) */
  handshakeTimeoutMs?: number
  offlineQueue?: { maxEvents?: number; maxBytes?: number; flushIntervalMs?: number }
  dedup?: { windowSeconds?: number; maxIds?: number }
  /** off unless given: sliding-window limits on what reaches the application */
  inboundLimits?: InboundLimitOptions
  /** how long stop() waits for in-flight publishes and for each goodbye OK */
  goodbyeTimeoutMs?: number
  clock?: AgentClock
  random?: RandomSource
  /** defaults to the global fetch; NIP-11 discovery goes through it */
  fetch?: typeof fetch
  /**
   * The local IP address the WebSocket binds to (passed to `ws`, which gives it to `http.request`); the
   * system's choice when absent. A host holding many agents spreads them over several addresses: one source
   * address has about 28,000 ephemeral ports toward one relay, and a relay's per-IP limits count each address.
   * NIP-11 discovery goes through `fetch`, which this does not bind. Not an IP address: RangeError.
   */
  localAddress?: string
}

export interface ResolvedOptions {
  relays: string[]
  key: SigningKey
  capabilities: Capability[]
  version: string | undefined
  heartbeatMs: number
  leaseMs: number
  sessionMs: number
  reconnect: { minMs: number; maxMs: number; jitter: number; stableMs: number }
  maxDiscoveryRounds: number
  resumeOverlapSeconds: number
  maxWaitMs: number
  throttle: ThrottleRules
  retry: { maxAttempts: number; minMs: number; maxMs: number; jitter: number }
  okTimeoutMs: number
  handshakeTimeoutMs: number
  offlineQueue: { maxEvents: number; maxBytes: number; flushIntervalMs: number }
  dedup: { windowMs: number; maxIds: number }
  inboundLimits: InboundLimitOptions | undefined
  goodbyeTimeoutMs: number
  clock: AgentClock
  random: RandomSource
  fetch: typeof fetch
  localAddress: string | undefined
}

/** Throws AgentError('auth-rejected') for a bad key and RangeError for inconsistent settings. */
export function resolveOptions(o: AgentClientOptions): ResolvedOptions {
  if (!Array.isArray(o.relays) || o.relays.length === 0) throw new RangeError('relays: at least one ws(s) URL is required')
  for (const url of o.relays) if (!/^wss?:\/\//i.test(url)) throw new RangeError(`relays: not a ws(s) URL: ${url}`)
  // the gradient of the Agent-Reach seed: a lease outlives two lost heartbeats, a session outlives the lease
  const heartbeatSeconds = o.heartbeatSeconds ?? 15
  const leaseSeconds = o.leaseSeconds ?? 45
  const sessionSeconds = o.sessionSeconds ?? 90
  if (!(heartbeatSeconds > 0)) throw new RangeError('heartbeatSeconds must be positive')
  if (leaseSeconds < 2 * heartbeatSeconds) throw new RangeError('leaseSeconds must be at least 2 × heartbeatSeconds')
  if (!(sessionSeconds > leaseSeconds)) throw new RangeError('sessionSeconds must be greater than leaseSeconds')
  if (o.localAddress !== undefined && isIP(o.localAddress) === 0) throw new RangeError(`localAddress: not an IP address: ${o.localAddress}`)
  return {
    relays: [...o.relays],
    key: toAgentKey(o.secretKey),
    capabilities: o.capabilities.map((c) => ({ ...c, kinds: [...c.kinds] })),
    version: o.version,
    heartbeatMs: heartbeatSeconds * 1000,
    leaseMs: leaseSeconds * 1000,
    sessionMs: sessionSeconds * 1000,
    // docs/agent-client.md (Retry rules): 1 s doubling to 30 s, jitter only lengthens (≤ 25 %), reset after 30 s up
    reconnect: { minMs: 1000, maxMs: 30_000, jitter: 0.25, stableMs: 30_000, ...o.reconnect },
    maxDiscoveryRounds: o.maxDiscoveryRounds ?? 3,
    // 60 s covers same-second events (nostr-tools' `since = last + 1` loses them) and modest clock skew
    resumeOverlapSeconds: o.resumeOverlapSeconds ?? 60,
    maxWaitMs: o.maxWaitMs ?? 5000,
    // below the relay's human tier (10/s, burst 50): an agent not in the roster is refused above it
    throttle: {
      global: { ratePerSecond: 10, burst: 50 },
      perChannel: { ratePerSecond: 5, burst: 20 },
      perRecipient: { ratePerSecond: 2, burst: 10 },
      ...o.throttle,
    },
    retry: { maxAttempts: 4, minMs: 400, maxMs: 10_000, jitter: 0.25, ...o.retry },
    // a relay answers an OK in milliseconds; ten seconds is a relay that is not answering
    okTimeoutMs: o.okTimeoutMs ?? 10_000,
    handshakeTimeoutMs: o.handshakeTimeoutMs ?? 10_000,
    // 256 events / 1 MiB: minutes of a busy agent's output, a small fraction of its memory
    offlineQueue: { maxEvents: 256, maxBytes: 1 << 20, flushIntervalMs: 50, ...o.offlineQueue },
    // 300 s is five resume overlaps; 20,000 ids is ~2 MB, enough for 60 events/s over the window
    dedup: { windowMs: (o.dedup?.windowSeconds ?? 300) * 1000, maxIds: o.dedup?.maxIds ?? 20_000 },
    inboundLimits: o.inboundLimits,
    goodbyeTimeoutMs: o.goodbyeTimeoutMs ?? 2000,
    clock: o.clock ?? systemClock,
    random: o.random ?? Math.random,
    fetch: o.fetch ?? ((...args) => fetch(...args)),
    localAddress: o.localAddress,
  }
}

function toAgentKey(secretKey: string | Uint8Array): SigningKey {
  const bytes = typeof secretKey === 'string' ? hexKeyBytes(secretKey) : secretKey
  if (!(bytes instanceof Uint8Array) || bytes.length !== 32) throw badKey()
  try {
    schnorr.getPublicKey(bytes)
  } catch {
    throw badKey() // zero, or not below the curve order
  }
  return toSigningKey(Uint8Array.from(bytes))
}

function hexKeyBytes(hex: string): Uint8Array {
  if (!isHex64IgnoringCase(hex)) throw badKey()
  return hexToBytes(hex.toLowerCase())
}

const badKey = () => new AgentError('auth-rejected', 'secretKey must be 64 hex characters (or 32 bytes) of a valid secp256k1 secret key')
