import type { Filter } from '../../protocols/nip01/filter.js'

/**
 * How a filter is read, whatever the backend: the index that drives the scan (its most selective field) and
 * whether it can match anything at all. Both SQL builders plan from here, so their choices never drift apart.
 */
export type Access = 'ids' | 'author-kind' | 'author' | 'tag' | 'kind' | 'time'

/** Above this many (author, kind) pairs a filter gets one arm per author instead of one per pair. */
export const MAX_PAIR_ARMS = 1024

/** false when the filter can match nothing: an empty list (NIP-01 `includes` on []), or limit 0. */
export function canMatch(f: Filter): boolean {
  if (f.limit !== undefined && f.limit <= 0) return false
  if (f.ids?.length === 0 || f.authors?.length === 0 || f.kinds?.length === 0) return false
  return Object.values(f.tags ?? {}).every((values) => values.length > 0)
}

/** the tag letter with the fewest values: the narrowest tag index range */
export function drivingTagOf(f: Filter): string | undefined {
  let best: [string, string[]] | undefined
  for (const entry of Object.entries(f.tags ?? {})) if (!best || entry[1].length < best[1].length) best = entry
  return best?.[0]
}

export function accessOf(f: Filter): Access {
  if (f.ids) return 'ids'
  if (f.authors) return f.kinds ? 'author-kind' : 'author'
  if (drivingTagOf(f) !== undefined) return 'tag'
  return f.kinds ? 'kind' : 'time'
}
