// Every Redis key and pub/sub channel name Apiary uses (architecture §9) is spelled here and nowhere else, so two
// nodes of different builds can only disagree about a name if this file differs between them.
//
// Shape: `apiary:{<communityId>}:<what>`; the braces are a Redis Cluster hash tag, so one community's keys
// share a slot and a multi-key script (or MGET) over them works in cluster mode. The only global keys are
// per IP, `apiary:ip:<ip>:<what>`: the connection limiter (`conn`) and the open-socket count (`open`) are
// decided before the Host header picks a community, and the NIP-86 pre-verification budget (`api`) guards
// the node's verifier pool, which every community shares.
//
// Case: every component is lowercase, and a formatter *rejects* (RangeError) an uppercase or otherwise
// non-canonical pubkey, event id or community id instead of lowercasing it; IP addresses are normalised
// (infra/gates/key-parts.ts says why). Every producer already demands lowercase (NIP-01 ids and pubkeys are
// lowercase hex, `parseEvent` and the config schema enforce it), so reaching here with one is a bug that
// normalising would hide.
//
// Formatters take values our own code produced and throw RangeError on a bad one (a bug); parseChannel takes
// text from outside and returns a Result.

import { fromChannelSegment, toChannelSegment } from '../../protocols/channel-segment.js'
import { isCommunityId } from '../../protocols/ids.js'
import { isSessionId } from '../../protocols/mesh/session-id.js'
import { isChannelId } from '../../protocols/nip29.js'
import { type Reason, reason } from '../../protocols/reasons.js'
import { err, ok, type Result } from '../../protocols/result.js'
import type { CommunityChannel } from '../bus/bus.js'
import { checkCommunityId, checkHex64, toIpSegment, toPrincipalSegment } from '../gates/key-parts.js'

export type RateLimitType = 'events' | 'reqs' | 'api'

export interface ParsedChannel {
  community: string
  kind: CommunityChannel
  /** the NIP-29 group of an events channel; absent for `ev:global` and for the other kinds */
  channelId?: string
}

const ROOT = 'apiary'
// A NIP-29 group's events channel names it by its segment (protocols/channel-segment.ts), so no id can end the
// name early or alias another. `global` names the events channel of channel-less events: a group of that id
// has no events channel of its own (eventsChannel refuses it), or its events would pass for global ones.
const GLOBAL = 'global'

/**
 * `apiary:{c}:rl:<principal>:<type>`. `principal` is a 64-hex pubkey or `ip:<address>` (any spelling
 * parseIpSegment accepts; it is normalised): `rl:ip:203.0.113.7:api`, `rl:ip:2001-0db8-…-0001:api`.
 * The two never collide: an IP principal has one segment more and `ip` is not 64 hex digits.
 */
export function rateLimitKey(community: string, principal: string, type: RateLimitType): string {
  if (type !== 'events' && type !== 'reqs' && type !== 'api') throw new RangeError(`unknown rate-limit type: ${type}`)
  return scoped(community, 'rl', toPrincipalSegment(principal), type)
}

/** `apiary:ip:<ip>:conn` — global, not hash-tagged: per-IP admission happens before tenant resolution. */
export function ipConnKey(ip: string): string {
  return `${ROOT}:ip:${toIpSegment(ip)}:conn`
}

/**
 * `apiary:ip:<ip>:open` — the sockets open from one IP on every node (a sorted set of one member per socket,
 * scored by when it expires unless its node refreshes it). Global for the same reason as ipConnKey.
 */
export function ipOpenKey(ip: string): string {
  return `${ROOT}:ip:${toIpSegment(ip)}:open`
}

/**
 * `apiary:ip:<ip>:api` — NIP-86 calls from one IP, charged before the NIP-98 signature is checked. Global, not
 * per community: it protects the node's verifier pool, and a per-community key would multiply one IP's
 * budget by the number of hostnames it can address.
 */
export function ipApiKey(ip: string): string {
  return `${ROOT}:ip:${toIpSegment(ip)}:api`
}

/**
 * `apiary:ip:<ip>:auth` — NIP-42 AUTH messages from one IP, charged before the signature is checked. Global for
 * the reason of ipApiKey: a key per community would multiply one IP's AUTHs by the hostnames it can address.
 */
export function ipAuthKey(ip: string): string {
  return `${ROOT}:ip:${toIpSegment(ip)}:auth`
}

/** `apiary:{c}:nip98:<eventId>` — a claimed NIP-98 auth event id (replay guard). */
export function nip98Key(community: string, eventId: string): string {
  return scoped(community, 'nip98', checkHex64(eventId, 'event id'))
}

/** `apiary:{c}:presence:<pubkey>` — the latest presence status of a pubkey, expiring with its TTL. */
export function presenceKey(community: string, pubkey: string): string {
  return scoped(community, 'presence', checkHex64(pubkey, 'pubkey'))
}

/**
 * `apiary:{c}:presence-conn:<pubkey>` — how many connections, on any node, hold this pubkey's presence. Same
 * hash slot as presenceKey (one MULTI refreshes both); `presence-conn` can't collide with `presence:<hex>`.
 */
export function presenceConnKey(community: string, pubkey: string): string {
  return scoped(community, 'presence-conn', checkHex64(pubkey, 'pubkey'))
}

/** `apiary:{c}:ev:<channel segment>` for a NIP-29 group's events, `apiary:{c}:ev:global` for the rest. */
export function eventsChannel(community: string, channelId?: string): string {
  if (channelId === undefined) return scoped(community, 'ev', GLOBAL)
  if (!isChannelId(channelId) || channelId === GLOBAL) throw new RangeError(`not a usable channel id: ${JSON.stringify(channelId)}`)
  return scoped(community, 'ev', toChannelSegment(channelId))
}

/** The channel formatters below by what they carry (the Redis bus's channelOf). */
export function communityChannel(community: string, channel: CommunityChannel): string {
  if (channel === 'events') return eventsChannel(community)
  return channel === 'conn-control' ? connControlChannel(community) : cacheInvalidationChannel(community)
}

/** `apiary:{c}:conn-control` — disconnect orders (imperative; architecture §6.7 keeps it apart from invalidation). */
export function connControlChannel(community: string): string {
  return scoped(community, 'conn-control')
}

/** `apiary:{c}:cache-invalidation` — cache keys to drop (idempotent). */
export function cacheInvalidationChannel(community: string): string {
  return scoped(community, 'cache-invalidation')
}

/**
 * `apiary:{c}:session:<session>:lease` — who owns a mesh session now: `owner|generation|kind`, expiring with
 * the lease (src/infra/mesh/session-directory.ts). Same hash slot as its generation key: one script holds both.
 */
export function sessionLeaseKey(community: string, session: string): string {
  return scoped(community, 'session', checkSessionId(session), 'lease')
}

/**
 * `apiary:{c}:session:<session>:generation` — the last generation handed out for a session. It never expires:
 * a generation is never issued twice, however long a session sits unowned.
 */
export function sessionGenerationKey(community: string, session: string): string {
  return scoped(community, 'session', checkSessionId(session), 'generation')
}

/** `apiary:mesh:ready:<runtime>` — a node's signed readiness record (global: the mesh spans every community). */
export function meshReadyKey(runtime: string): string {
  return `${MESH_READY_PREFIX}${checkHex64(runtime, 'runtime id')}`
}

/** Every readiness key starts with this (SCAN's MATCH is it plus `*`). */
export const MESH_READY_PREFIX = `${ROOT}:mesh:ready:`

/**
 * `apiary:console:session:<sha256 of the cookie>` — a console sign-in (JSON), expiring with it. Global: any node
 * accepts a session made on another. The key holds the cookie's hash, so reading Redis yields no usable cookie.
 */
export function consoleSessionKey(tokenSha256Hex: string): string {
  return `${ROOT}:console:session:${checkHex64(tokenSha256Hex, 'session hash')}`
}

/** `apiary:console:challenge:<hex>` — a NIP-07 sign-in challenge not yet used, expiring unused. */
export function consoleChallengeKey(challengeHex: string): string {
  return `${ROOT}:console:challenge:${checkHex64(challengeHex, 'challenge')}`
}

// The console's status board (infra/console/redis-status-board.ts): global, scoped by the cluster (the relay
// key's pubkey every node of it shares, so two clusters on one Redis keep apart), in one hash slot so one
// MGET reads every node's status in cluster mode. No community key starts `apiary:console:`.
const consoleBoard = (cluster: string) => `${ROOT}:console:{${checkHex64(cluster, 'cluster key')}}`
const NODE_ID = /^[0-9a-z-]{1,64}$/

/** `apiary:console:{<cluster>}:node:<node>` — a node's latest status (JSON), expiring unless it publishes again. */
export function consoleNodeKey(cluster: string, node: string): string {
  return `${consoleBoard(cluster)}:node:${checkNodeId(node)}`
}

/** `apiary:console:{<cluster>}:agents:<node>` — a node's agent rows, published only while a console watches agents. */
export function consoleAgentsKey(cluster: string, node: string): string {
  return `${consoleBoard(cluster)}:agents:${checkNodeId(node)}`
}

/** `apiary:console:{<cluster>}:nodes` — every node that published, scored by when it last did (ms since the epoch). */
export function consoleNodesKey(cluster: string): string {
  return `${consoleBoard(cluster)}:nodes`
}

/** `apiary:console:{<cluster>}:watch-agents` — set while some console shows agents; expires a few seconds after. */
export function consoleWatchAgentsKey(cluster: string): string {
  return `${consoleBoard(cluster)}:watch-agents`
}

const CHANNEL_NAME = /^apiary:\{([^{}]*)\}:(.*)$/

/**
 * The inverse of the three channel formatters, for names arriving from Redis (pmessage). Strict: anything
 * a formatter could not have produced — another prefix, a community outside the id pattern, missing
 * braces, an extra or empty segment, any uppercase — is refused rather than guessed at.
 */
export function parseChannel(name: string): Result<ParsedChannel> {
  const m = CHANNEL_NAME.exec(name)
  if (!m) return invalid('not an apiary community channel', name)
  const [, community = '', rest = ''] = m
  if (!isCommunityId(community)) return invalid('bad community id in channel', name)
  if (rest === 'conn-control') return ok({ community, kind: 'conn-control' })
  if (rest === 'cache-invalidation') return ok({ community, kind: 'cache-invalidation' })
  if (!rest.startsWith('ev:')) return invalid('unknown channel kind', name)
  const segment = rest.slice('ev:'.length)
  if (segment === GLOBAL) return ok({ community, kind: 'events' })
  const channelId = fromChannelSegment(segment)
  if (channelId === undefined) return invalid('bad channel id', name)
  return ok({ community, kind: 'events', channelId })
}

function scoped(community: string, ...parts: string[]): string {
  return `${ROOT}:{${checkCommunityId(community)}}:${parts.join(':')}`
}

function checkNodeId(node: string): string {
  if (!NODE_ID.test(node)) throw new RangeError(`not a node id: ${JSON.stringify(node.slice(0, 80))}`)
  return node
}

function checkSessionId(session: string): string {
  if (!isSessionId(session)) throw new RangeError(`not a mesh session id: ${JSON.stringify(session.slice(0, 80))}`)
  return session
}

function invalid(why: string, name: string): Result<never, Reason> {
  return err(reason('invalid', `${why}: ${JSON.stringify(name.slice(0, 120))}`))
}
