import { isHex64 } from '../ids.js'
import type { Limits } from '../limits.js'
import { reason } from '../reasons.js'
import { err, OK_VOID, ok, type Result } from '../result.js'
import type { NostrEvent } from './event.js'
import { MAX_KIND } from './kinds.js'

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

// --- parsing untrusted input -----------------------------------------------------------------------------

/**
 * Values per list field (ids, authors, kinds, each #x). Bounds matching work (matchFilter is O(values) per
 * event) and subscription-index entries per filter, while still fitting a large follow list in `authors`
 * (contact lists beyond 1000 follows are rare). Not in Limits: NIP-11 has no field to advertise it.
 */
const MAX_FILTER_VALUES = 1000
const TAG_KEY = /^#[a-zA-Z]$/

const isKind = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= MAX_KIND
const isString = (v: unknown): v is string => typeof v === 'string'
const isTimestamp = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0

/**
 * One REQ/COUNT filter. NIP-01: ids and authors are exact 64-char lowercase hex (prefix matching was
 * removed). Empty lists are kept: they match nothing. `limit` above maxLimit is clamped, not refused, and
 * stays undefined when absent (see effectiveLimit). Unknown keys (`search`, multi-letter `#tag`) are ignored.
 */
export function parseFilter(json: unknown, limits: Limits): Result<Filter> {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return invalid('filter is not an object')
  const f: Filter = {}
  for (const [key, value] of Object.entries(json)) {
    const r = applyFilterKey(f, key, value, limits)
    if (!r.ok) return r
  }
  return ok(f)
}

function applyFilterKey(f: Filter, key: string, value: unknown, limits: Limits): Result<void> {
  switch (key) {
    case 'ids':
      return setList(value, isHex64, key, (v) => (f.ids = v), 'must be 64 lowercase hex characters')
    case 'authors':
      return setList(value, isHex64, key, (v) => (f.authors = v), 'must be 64 lowercase hex characters')
    case 'kinds':
      return setList(value, isKind, key, (v) => (f.kinds = v), 'must be integers from 0 to 65535')
    case 'since':
    case 'until':
      if (!isTimestamp(value)) return invalid(`${key} must be a non-negative integer`)
      f[key] = value
      return OK_VOID
    case 'limit':
      if (!isTimestamp(value)) return invalid('limit must be a non-negative integer')
      f.limit = Math.min(value, limits.maxLimit)
      return OK_VOID
    default:
      if (!TAG_KEY.test(key)) return OK_VOID
      return setList(value, isString, key, (v) => (f.tags = { ...f.tags, [key.slice(1)]: v }), 'must be strings')
  }
}

function setList<T>(value: unknown, isItem: (v: unknown) => v is T, key: string, set: (v: T[]) => void, rule: string): Result<void> {
  if (!Array.isArray(value)) return invalid(`${key} must be an array`)
  if (value.length > MAX_FILTER_VALUES) return invalid(`${key} has more than ${MAX_FILTER_VALUES} values`)
  if (!value.every(isItem)) return invalid(`${key} values ${rule}`)
  set(value)
  return OK_VOID
}

/**
 * The filters of one REQ/COUNT. NIP-01 shows at least one filter and a REQ without one could never match, so
 * zero is refused rather than held open as a subscription that delivers nothing.
 */
export function parseFilters(list: readonly unknown[], limits: Limits): Result<Filter[]> {
  if (list.length === 0) return invalid('at least one filter is required')
  if (list.length > limits.maxFilters) return invalid(`too many filters (max ${limits.maxFilters})`)
  const out: Filter[] = []
  for (const item of list) {
    const f = parseFilter(item, limits)
    if (!f.ok) return f
    out.push(f.value)
  }
  return ok(out)
}

/** Values in the lists of these filters, all together: each value of a driving list is one index range read. */
export function countFilterValues(filters: readonly Filter[]): number {
  let n = 0
  for (const f of filters) {
    n += (f.ids?.length ?? 0) + (f.authors?.length ?? 0) + (f.kinds?.length ?? 0)
    for (const values of Object.values(f.tags ?? {})) n += values.length
  }
  return n
}

/** The number of stored events a query may return for this filter. */
export const effectiveLimit = (f: Filter, limits: Limits): number => Math.min(f.limit ?? limits.defaultLimit, limits.maxLimit)

const invalid = (text: string): Result<never> => err(reason('invalid', text))
