import { parseAddressRange } from './address-range.js'
import { isHex64 } from './ids.js'
import type { NostrEvent } from './nip01/event.js'
import { err, ok, type Result } from './result.js'

/**
 * Cluster control payloads (docs/architecture.md §6.7): a Nostr event signed by the relay key, so Redis
 * write access alone can't kick users. Two channels with two vocabularies, on purpose: a disconnect is
 * imperative (not idempotent), a cache drop is idempotent.
 */
export const KIND_CONTROL = 29_333 // ephemeral range: never stored, never fanned out to clients

export type ConnControlOp =
  | { op: 'DisconnectPubkey'; pubkey: string; eventId: string; reason: string }
  | { op: 'DisconnectCommunity'; reason: string }
  /** `range`: a blockip entry (an address or CIDR range, address-range.ts) */
  | { op: 'DisconnectIp'; range: string; reason: string }

export type CacheInvalidationOp =
  | { op: 'InvalidateMembership'; channel: string; pubkey?: string }
  | { op: 'InvalidateVisibility'; channel: string }
  | { op: 'ChannelDeleted'; channel: string }
  /** the community's members (its allowed list) changed: drop every community-membership answer */
  | { op: 'InvalidateMembers' }
  | { op: 'InvalidateAll' }
  /** the community's blockip list changed: each node reads it again */
  | { op: 'InvalidateBlockedIps' }

export type ControlChannel = 'conn-control' | 'cache-invalidation'

export interface ControlTemplate {
  kind: number
  tags: string[][]
  content: string
}

/** The unsigned event the relay key signs; the `c` tag binds the payload to one community and channel. */
export function toControlTemplate(community: string, channel: ControlChannel, op: ConnControlOp | CacheInvalidationOp): ControlTemplate {
  return { kind: KIND_CONTROL, tags: [['c', community, channel]], content: JSON.stringify(op) }
}

export interface ControlExpectation {
  relayPubkey: string
  community: string
  channel: ControlChannel
  nowSeconds: number
  /** a payload older (or further in the future) than this is stale: replays of old disconnects do nothing */
  maxAgeSeconds: number
}

function parseOp(channel: ControlChannel, v: unknown): ConnControlOp | CacheInvalidationOp | undefined {
  if (!v || typeof v !== 'object') return undefined
  const o = v as Record<string, unknown>
  const str = (k: string) => typeof o[k] === 'string'
  if (channel === 'conn-control') {
    if (o.op === 'DisconnectPubkey' && isHex64(o.pubkey) && str('eventId') && str('reason'))
      return { op: 'DisconnectPubkey', pubkey: o.pubkey as string, eventId: o.eventId as string, reason: o.reason as string }
    if (o.op === 'DisconnectCommunity' && str('reason')) return { op: 'DisconnectCommunity', reason: o.reason as string }
    if (o.op === 'DisconnectIp' && str('range') && str('reason') && parseAddressRange(o.range as string).ok)
      return { op: 'DisconnectIp', range: o.range as string, reason: o.reason as string }
    return undefined
  }
  if ((o.op === 'InvalidateMembership' || o.op === 'InvalidateVisibility' || o.op === 'ChannelDeleted') && str('channel')) {
    if (o.op === 'InvalidateMembership')
      return { op: o.op, channel: o.channel as string, ...(str('pubkey') ? { pubkey: o.pubkey as string } : {}) }
    return { op: o.op, channel: o.channel as string }
  }
  if (o.op === 'InvalidateAll' || o.op === 'InvalidateMembers') return { op: o.op }
  if (o.op === 'InvalidateBlockedIps') return { op: 'InvalidateBlockedIps' }
  return undefined
}

/**
 * Checks a received control event's envelope and op (the signature is the verifier's job, done first).
 * Foreign signer, wrong community or channel, stale, malformed or unknown op ⇒ an error to log and skip.
 */
export function parseControlEvent(e: NostrEvent, x: ControlExpectation): Result<ConnControlOp | CacheInvalidationOp, string> {
  if (e.kind !== KIND_CONTROL) return err('not a control event')
  if (e.pubkey !== x.relayPubkey) return err('foreign signer')
  const c = e.tags.find((t) => t[0] === 'c')
  if (!c || c[1] !== x.community || c[2] !== x.channel) return err('wrong community or channel')
  if (Math.abs(x.nowSeconds - e.created_at) > x.maxAgeSeconds) return err('stale')
  let body: unknown
  try {
    body = JSON.parse(e.content)
  } catch {
    return err('content is not JSON')
  }
  const op = parseOp(x.channel, body)
  return op ? ok(op) : err('unknown or malformed op')
}
