import type { NostrEvent } from './event'

/**
 * A REQ/COUNT filter after parsing. Tag conditions (`#e`, `#p`, ... single letters only) are gathered in
 * `tags`, keyed by the letter without `#`.
 */
export interface Filter {
  ids?: string[]
  authors?: string[]
  kinds?: number[]
  since?: number
  until?: number
  limit?: number
  tags?: Record<string, string[]>
}

/** The reference matcher: every store must return exactly what this accepts (property-tested). */
export function matchFilter(f: Filter, e: NostrEvent): boolean {
  if (f.ids && !f.ids.includes(e.id)) return false
  if (f.authors && !f.authors.includes(e.pubkey)) return false
  if (f.kinds && !f.kinds.includes(e.kind)) return false
  // NIP-01: since <= created_at <= until, both inclusive
  if (f.since !== undefined && e.created_at < f.since) return false
  if (f.until !== undefined && e.created_at > f.until) return false
  if (f.tags) {
    for (const [letter, values] of Object.entries(f.tags)) {
      if (!e.tags.some((t) => t[0] === letter && t[1] !== undefined && values.includes(t[1]))) return false
    }
  }
  return true
}

export const matchFilters = (fs: readonly Filter[], e: NostrEvent): boolean => fs.some((f) => matchFilter(f, e))
