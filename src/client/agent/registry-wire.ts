// The agent registry's wire format, shared with the relay half (docs/agent-client.md, docs/agent-registry.md):
// a NIP-89 kind 31990 announcement of capabilities, kind 20001 presence heartbeats that keep its lease, and the
// mapping discover() makes from the two.
import { ANNOUNCEMENT_D, KIND_ANNOUNCEMENT, KIND_DEPARTURE } from '../../protocols/agent-registry.js'
import type { NostrEvent } from '../../protocols/nip01/event.js'
import { KIND_PRESENCE } from '../../protocols/nip01/kinds.js'
import type { EventTemplate } from '../../protocols/nip01/sign.js'
import type { Capability } from './options.js'

export { ANNOUNCEMENT_D, KIND_ANNOUNCEMENT, KIND_DEPARTURE, KIND_PRESENCE }

export interface DiscoveredAgent {
  pubkey: string
  capabilities: Capability[]
  version?: string
  load?: number
  /** unix ms: the last heartbeat's created_at plus the relay's lease */
  leaseExpiresAt: number
}

/**
 * `concurrency`: how many dispatched jobs of each capability the agent runs at once (docs/jobs.md), one
 * `["concurrency", n, capability]` tag each; absent when it serves none.
 */
export function announcementTemplate(
  capabilities: readonly Capability[],
  version?: string,
  load?: number,
  concurrency?: Readonly<Record<string, number>>,
): EventTemplate {
  const tags: string[][] = [['d', ANNOUNCEMENT_D]]
  for (const c of capabilities) tags.push(['c', c.name])
  for (const k of new Set(capabilities.flatMap((c) => c.kinds))) tags.push(['k', String(k)])
  if (version !== undefined) tags.push(['version', version])
  if (load !== undefined) tags.push(['load', clampLoad(load).toFixed(2)])
  for (const [capability, n] of Object.entries(concurrency ?? {})) tags.push(['concurrency', String(n), capability])
  const content = JSON.stringify({
    capabilities: capabilities.map((c) => ({
      name: c.name,
      kinds: c.kinds,
      ...(c.description !== undefined && { description: c.description }),
    })),
  })
  return { kind: KIND_ANNOUNCEMENT, content, tags }
}

export const heartbeatTemplate = (status: 'online' | 'offline'): EventTemplate => ({ kind: KIND_PRESENCE, content: status, tags: [] })

export const clampLoad = (load: number): number => Math.min(1, Math.max(0, Number.isFinite(load) ? load : 0))

/**
 * One agent per pubkey from announcements and heartbeats as a relay returned them (untrusted): the newest
 * announcement per author; dropped without a live "online" heartbeat at `nowMs`.
 */
export function toDiscovered(
  announcements: NostrEvent[],
  heartbeats: NostrEvent[],
  leaseSeconds: number,
  nowMs: number,
): DiscoveredAgent[] {
  const latestBeat = newestPerAuthor(heartbeats.filter((e) => e.kind === KIND_PRESENCE))
  const out: DiscoveredAgent[] = []
  for (const a of newestPerAuthor(announcements.filter((e) => e.kind === KIND_ANNOUNCEMENT)).values()) {
    const beat = latestBeat.get(a.pubkey)
    if (beat?.content !== 'online') continue
    const leaseExpiresAt = (beat.created_at + leaseSeconds) * 1000
    if (leaseExpiresAt <= nowMs) continue
    const version = tagValue(a, 'version')
    const load = Number(tagValue(a, 'load'))
    out.push({
      pubkey: a.pubkey,
      capabilities: capabilitiesOf(a),
      ...(version !== undefined && { version }),
      ...(tagValue(a, 'load') !== undefined && Number.isFinite(load) && { load: clampLoad(load) }),
      leaseExpiresAt,
    })
  }
  return out
}

/** the content's list when it parses, else one capability per `c` tag with the `k` kinds */
export function capabilitiesOf(a: NostrEvent): Capability[] {
  try {
    const parsed = JSON.parse(a.content) as { capabilities?: unknown }
    if (Array.isArray(parsed.capabilities)) {
      const caps = parsed.capabilities.filter(isCapability)
      if (caps.length > 0) return caps
    }
  } catch {
    // a hand-written announcement: the tags still say it
  }
  const kinds = a.tags
    .filter((t) => t[0] === 'k')
    .map((t) => Number(t[1]))
    .filter(Number.isInteger)
  return a.tags.filter((t) => t[0] === 'c' && t[1] !== undefined).map((t) => ({ name: t[1]!, kinds }))
}

const isCapability = (c: unknown): c is Capability =>
  typeof c === 'object' &&
  c !== null &&
  typeof (c as Capability).name === 'string' &&
  Array.isArray((c as Capability).kinds) &&
  (c as Capability).kinds.every(Number.isInteger)

function newestPerAuthor(events: NostrEvent[]): Map<string, NostrEvent> {
  const m = new Map<string, NostrEvent>()
  for (const e of events) {
    const had = m.get(e.pubkey)
    // NIP-01: newer created_at wins, ties go to the lowest id
    if (!had || e.created_at > had.created_at || (e.created_at === had.created_at && e.id < had.id)) m.set(e.pubkey, e)
  }
  return m
}

const tagValue = (e: NostrEvent, name: string): string | undefined => e.tags.find((t) => t[0] === name)?.[1]
