import type { Filter } from '../../../protocols/nip01/filter.js'
import type { QueryOptions } from '../event-store.js'
import { type Access, accessOf, canMatch, drivingTagOf, MAX_PAIR_ARMS } from '../filter-plan.js'
import { withinRowsBudget } from './postgres-read-budget.js'
import { toIndexText } from './postgres-schema.js'

/**
 * Filter → SQL for the PostgreSQL event store. Every list travels as one array parameter (`= ANY($n)`), so
 * the text depends on the filter's shape alone and the driver's prepared statements are reused.
 *
 * A limited filter is answered with one arm per value of its driving list, as in sqlite-query.ts, but in one
 * statement: `unnest($values) CROSS JOIN LATERAL (… ORDER BY created_at DESC, id LIMIT n)`. Each arm is an
 * equality on an index prefix, so the index yields its rows newest first and the arm stops after `limit`
 * rows; the outer ORDER BY … LIMIT keeps the newest of the union. Without arms, `pubkey = ANY(…)` makes
 * PostgreSQL 15 read every row of every listed author before sorting.
 *
 * Driving list, most selective first: ids, authors (+kinds), the tag with fewest values, kinds,
 * time. The planner may still choose otherwise with its statistics; the query-plan test checks the shapes.
 *
 * A read is one statement, whatever its number of filters (their selects joined by UNION ALL), and its rows
 * are counted together against limits.maxRowsExamined (postgres-read-budget.ts), as SQLite counts a read's
 * statements together: the rows each select's driving index yields, and the tag rows its tag conditions read.
 */

export interface PgQuery {
  sql: string
  params: unknown[]
}

class Params {
  readonly list: unknown[] = []
  /** the placeholder of the read's rows budget; undefined: the read is not counted */
  rowsBound: string | undefined

  constructor(maxRows: number | undefined) {
    if (maxRows !== undefined && Number.isFinite(maxRows)) this.rowsBound = this.add(maxRows)
  }

  add(value: unknown): string {
    this.list.push(value)
    return `$${this.list.length}`
  }
  texts(values: readonly string[]): string {
    return `${this.add([...new Set(values)])}::text[]`
  }
  ints(values: readonly number[]): string {
    return `${this.add([...new Set(values)])}::int[]`
  }
  tagValues(values: readonly string[]): string {
    return this.texts(values.map(toIndexText))
  }
}

/** The arm lists of a limited filter: what to unnest, and the equalities each arm adds to its rows. */
interface Arms {
  from: string[]
  where: string[]
  /** lists consumed by the arms, so they are not repeated as `= ANY` conditions */
  authors: boolean
  kinds: boolean
  tagValues: boolean
}

function armsOf(p: Params, f: Filter, access: Access): Arms | undefined {
  const kinds = f.kinds ?? []
  const pairs = (n: number) => kinds.length > 0 && n * kinds.length <= MAX_PAIR_ARMS
  const kindArm = () => `unnest(${p.ints(kinds)}) AS k (kind)`
  const arms: Arms = { from: [], where: [], authors: false, kinds: false, tagValues: false }
  switch (access) {
    case 'ids':
    case 'time':
      return undefined
    case 'author':
    case 'author-kind':
      arms.from.push(`unnest(${p.texts(f.authors!)}) AS a (pubkey)`)
      arms.where.push('e.pubkey = a.pubkey')
      arms.authors = true
      break
    case 'kind':
      arms.from.push(kindArm())
      arms.where.push('e.kind = k.kind')
      arms.kinds = true
      return arms
    case 'tag':
      arms.from.push(`unnest(${p.tagValues(f.tags![drivingTagOf(f)!]!)}) AS v (value)`)
      arms.where.push('t.value = v.value')
      arms.tagValues = true
      break
  }
  // (author, kind) pairs seek events_by_author_kind; no tags index starts with (value, kind) (postgres-schema.ts
  // EVENTS_V2), so a tag arm reads its value newest first and kinds stay a condition
  if (access !== 'tag' && pairs(f.authors!.length)) {
    arms.from.push(kindArm())
    arms.where.push('e.kind = k.kind')
    arms.kinds = true
  }
  return arms
}

/**
 * One SELECT for one filter (call `canMatch` first): `rows` selects what query() returns, `seqs` row keys
 * only, for COUNT; both newest first and limited when the filter has a limit, so COUNT counts the page REQ
 * returns. A tag-driven select without a limit may return an event once per matching value: callers
 * deduplicate.
 */
function toSelectSql(p: Params, community: string, f: Filter, opts: QueryOptions, what: 'rows' | 'seqs'): string {
  const access = accessOf(f)
  const limited = f.limit !== undefined
  const arms = limited ? armsOf(p, f, access) : undefined
  const driving = access === 'tag' ? drivingTagOf(f)! : undefined
  const c = p.add(community)
  const where: string[] = [...(arms?.where ?? [])]
  // each row the driving index yields, before any other condition can reject it
  if (p.rowsBound) where.push(withinRowsBudget(driving !== undefined ? 't.event_seq' : 'e.seq', p.rowsBound))
  let from = 'events e'
  if (driving !== undefined) {
    from = 'tags t JOIN events e ON e.seq = t.event_seq'
    where.push(`t.community = ${c}`, `t.name = ${p.add(driving)}`)
    if (!arms?.tagValues) where.push(`t.value = ANY(${p.tagValues(f.tags![driving]!)})`)
    if (f.kinds && !arms?.kinds) where.push(`t.kind = ANY(${p.ints(f.kinds)})`)
  } else {
    where.push(`e.community = ${c}`)
    if (f.kinds && !arms?.kinds) where.push(`e.kind = ANY(${p.ints(f.kinds)})`)
  }
  const time = driving !== undefined ? 't' : 'e'
  // NIP-01: since <= created_at <= until, both inclusive
  if (f.since !== undefined) where.push(`${time}.created_at >= ${p.add(f.since)}`)
  if (f.until !== undefined) where.push(`${time}.created_at <= ${p.add(f.until)}`)
  if (f.ids) where.push(`e.id = ANY(${p.texts(f.ids)})`)
  if (f.authors && !arms?.authors) where.push(`e.pubkey = ANY(${p.texts(f.authors)})`)
  // NIP-40: an expired event is never served
  where.push(`(e.expires_at IS NULL OR e.expires_at > ${p.add(opts.now)})`)
  if (opts.authorOnly && opts.authorOnly.kinds.length > 0) where.push(authorOnlyCondition(p, c, opts.authorOnly))
  if (opts.hiddenChannels && opts.hiddenChannels.length > 0) where.push(`NOT ${tagCondition(p, c, 'z', "'h'", opts.hiddenChannels)}`)
  for (const rule of opts.hiddenChannelState ?? [])
    where.push(`NOT (e.kind = ANY(${p.ints(rule.kinds)}) AND ${tagCondition(p, c, 'w', p.add(rule.tag), rule.channels)})`)
  for (const [letter, values] of Object.entries(f.tags ?? {})) {
    if (letter === driving) continue
    where.push(tagCondition(p, c, 'x', p.add(letter), values))
  }
  // the arms' outer query orders by created_at and id, so a limited seqs page carries them too
  const select = what === 'rows' ? 'e.raw, e.id, e.created_at, e.kind' : arms ? 'e.seq, e.id, e.created_at' : 'e.seq'
  const body = `SELECT ${select} FROM ${from} WHERE ${where.join(' AND ')}`
  if (!limited) return body
  const limit = p.add(f.limit)
  // NIP-01: newest first, ties lowest id first; the limited set must be the newest ones
  const page = `${body} ORDER BY ${time}.created_at DESC, e.id LIMIT ${limit}`
  if (!arms) return page
  // an event matching several tag values comes out of several arms: DISTINCT ON keeps one copy
  return `SELECT DISTINCT ON (x.created_at, x.id) ${what === 'rows' ? 'x.raw, x.id, x.created_at, x.kind' : 'x.seq'}
    FROM ${arms.from.join(' CROSS JOIN ')} CROSS JOIN LATERAL (${page}) x
    ORDER BY x.created_at DESC, x.id LIMIT ${limit}`
}

/**
 * The event has one of `values` in tag `name`. The community term is redundant for correctness but lets the
 * planner answer the EXISTS from the value index (as a hashed subplan) instead of scanning every tag row.
 * The tag rows it reads count against the read's rows: the planner may drive the whole read from them.
 */
function tagCondition(p: Params, c: string, alias: string, name: string, values: readonly string[]): string {
  const counted = p.rowsBound ? ` AND ${withinRowsBudget(`${alias}.event_seq`, p.rowsBound)}` : ''
  return `EXISTS (SELECT 1 FROM tags ${alias} WHERE ${alias}.event_seq = e.seq AND ${alias}.community = ${c}
    AND ${alias}.name = ${name} AND ${alias}.value = ANY(${p.tagValues(values)})${counted})`
}

/** Author-only kinds (DMs, gift wraps) only for their author or a `p`-tagged reader. */
function authorOnlyCondition(p: Params, c: string, rule: NonNullable<QueryOptions['authorOnly']>): string {
  const hidden = `e.kind = ANY(${p.ints(rule.kinds)})`
  if (rule.readers.length === 0) return `NOT ${hidden}`
  const readers = p.texts(rule.readers)
  return `(NOT ${hidden} OR e.pubkey = ANY(${readers}) OR ${tagCondition(p, c, 'y', "'p'", rule.readers)})`
}

/**
 * One statement for all of a read's filters, each its own select (limited and ordered when it has a limit)
 * and its rows `raw, id, created_at, kind`; the caller merges them (an event can match several filters, or a
 * tag filter without a limit once per value). `maxRows`: limits.maxRowsExamined, none when absent. undefined
 * when no filter can match.
 */
export function toQuerySql(community: string, filters: readonly Filter[], opts: QueryOptions, maxRows?: number): PgQuery | undefined {
  const p = new Params(maxRows)
  // parenthesized: a member of a UNION may only carry its own ORDER BY and LIMIT inside parentheses
  const parts = filters.filter(canMatch).map((f) => toSelectSql(p, community, f, opts, 'rows'))
  if (parts.length === 0) return undefined
  return { sql: parts.length === 1 ? parts[0]! : parts.map((s) => `(${s})`).join(' UNION ALL '), params: p.list }
}

/**
 * NIP-45: distinct events matching any filter, each filter counting at most its `limit` (the caller clamps,
 * so a COUNT reads no further than the REQ with the same filters would): several filters count the union of
 * their pages, each the newest `limit` as REQ returns them, as in sqlite-query.ts. `maxRows` as for
 * toQuerySql. undefined when no filter can match.
 */
export function toCountSql(community: string, filters: readonly Filter[], opts: QueryOptions, maxRows?: number): PgQuery | undefined {
  const p = new Params(maxRows)
  // parenthesized: a member of a UNION may only carry its own ORDER BY and LIMIT inside parentheses
  const parts = filters.filter(canMatch).map((f) => `(${toSelectSql(p, community, f, opts, 'seqs')})`)
  if (parts.length === 0) return undefined
  // UNION ALL + DISTINCT: a tag join yields an event once per matching value, and filters overlap
  return { sql: `SELECT COUNT(DISTINCT seq) AS n FROM (${parts.join(' UNION ALL ')}) AS u`, params: p.list }
}
