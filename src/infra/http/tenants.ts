import { normalizeHost } from '../../protocols/host.js'
import type { CommunityRecord } from '../store/community-store.js'

/** The Host header's name without its port (`[::1]:7777` → `[::1]`). */
export function hostnameOf(normalized: string): string {
  if (normalized.startsWith('[')) return normalized.slice(0, normalized.indexOf(']') + 1)
  const i = normalized.lastIndexOf(':')
  return i < 0 ? normalized : normalized.slice(0, i)
}

/**
 * Host → community, decided before the WebSocket upgrade (docs/architecture.md §6.1). A binding with a port
 * (`relay.example:8443`) wins over one without; unknown hosts resolve to nothing (HTTP 404).
 */
export class Tenants {
  private readonly byHost = new Map<string, CommunityRecord>()
  private readonly records = new Map<string, CommunityRecord>()

  constructor(records: CommunityRecord[]) {
    this.replace(records)
  }

  /** swap in a fresh community list (revalidation): the gateway keeps its reference to this object */
  replace(records: CommunityRecord[]): void {
    this.byHost.clear()
    this.records.clear()
    for (const r of records) {
      this.records.set(r.id, r)
      for (const h of r.hosts) {
        const n = normalizeHost(h, 'http')
        if (n) this.byHost.set(n, r)
      }
    }
  }

  /** the current record of a community (after the latest revalidation); undefined once archived */
  byId(id: string): CommunityRecord | undefined {
    return this.records.get(id)
  }

  ids(): string[] {
    return [...new Set([...this.byHost.values()].map((r) => r.id))]
  }

  resolve(hostHeader: string | undefined, scheme: 'ws' | 'wss' | 'http' | 'https'): ResolvedHost | undefined {
    const host = normalizeHost(hostHeader, scheme)
    if (!host) return undefined
    const exact = this.byHost.get(host)
    if (exact) return { record: exact, host, bound: host }
    const bound = hostnameOf(host)
    const record = this.byHost.get(bound)
    return record ? { record, host, bound } : undefined
  }
}

export interface ResolvedHost {
  record: CommunityRecord
  /** the Host header, normalized */
  host: string
  /** the community's binding it matched: `host` itself, or its name when only a binding without a port matched */
  bound: string
}

/**
 * The host of the NIP-42 relay URL: the Host header when it names a binding or the port the socket really came
 * in on, else the binding it matched, so a port a client made up never becomes a relay URL we accept.
 */
export function relayHostOf(resolved: ResolvedHost, localPort: number | undefined): string {
  if (resolved.host === resolved.bound) return resolved.host
  return resolved.host === `${resolved.bound}:${localPort}` ? resolved.host : resolved.bound
}
