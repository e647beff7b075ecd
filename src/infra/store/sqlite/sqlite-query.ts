import type { Filter } from '../../../protocols/nip01/filter.js'
import type { QueryOptions } from '../event-store.js'
import { type Access, accessOf, canMatch, drivingTagOf, MAX_PAIR_ARMS } from '../filter-plan.js'
// Extension needed: plain JS shared with the read worker, which runs without a TypeScript loader.
import { BUDGET_FUNCTION } from './sqlite-read-core.mjs'

/**
 * Filter → SQL for the SQLite event store. Values are always bound parameters; only index names, column
 * names and `?` marks are spliced into the text, so the text depends on the filter's shape alone and
 * prepared statements are reused across requests of the same shape.
 *
 * We pick the driving index ourselves (INDEXED BY, or CROSS JOIN for tags). Without ANALYZE statistics
 * SQLite prefers walking `events_by_time` to avoid a sort, which is a scan of the whole community when the
 * filter is selective. Choice, most selective first: ids, authors (+kinds), tags (+kinds), kinds, time.
 *
 * With a `limit`, a filter is split into arms, one per value of its driving list (see `armsOf`): each arm is
 * an equality on the index prefix, so the index yields rows newest first and the arm stops after `limit`
 * rows. The filter's answer is the top `limit` of the union of the arms (an event in the overall top N is in
 * the top N of its own arm), so a query reads at most arms × limit rows.
 *
 * Shapes that degrade (read every matching row of the driving list before the limit applies):
 * - authors × kinds above MAX_PAIR_ARMS pairs: one arm per author;
 * - tag values with kinds: one arm per value, reading that value's rows newest first and skipping other kinds
 *   (a kind rare among the value's rows reads further);
 * - a filter with no limit (the caller clamps, so only internal callers do this);
 * - COUNT with several filters: each limited filter is one statement ordered newest first (its page must be
 *   the one REQ returns, or overlapping filters would count differently), not one per arm, so a filter with
 *   several values in its driving list sorts all its matches before its limit applies;
 * - conditions outside the driving index that rarely match (an author's events with a rare tag, expired
 *   events, a narrow since/until on an author with a long history): the arm walks its range until `limit`
 *   rows qualify, at worst the whole range of that one value;
 * - very long driving lists: one statement run per value, so tens of thousands of authors hold the loop a
 *   long time. The caller's filter-size limits bound this.
 *
 * Every statement calls BUDGET_FUNCTION first in its WHERE, once per candidate row: the one point where a
 * read past its budget can be stopped (see sqlite-read-core.mjs).
 */

export type SqlParam = string | number
export interface SqlQuery {
  sql: string
  params: SqlParam[]
}

const INDEX_OF: Record<Exclude<Access, 'tag'>, string> = {
  ids: 'events_by_id',
  'author-kind': 'events_by_author_kind',
  author: 'events_by_author',
  kind: 'events_by_kind',
  time: 'events_by_time',
}

/** Sub-filters whose union is `f`, each with one value in its driving list (only worth it with a limit). */
export function armsOf(f: Filter): Filter[] {
  if (f.limit === undefined) return [f]
  const access = accessOf(f)
  const kinds = f.kinds ?? []
  const pairs = (n: number) => n * kinds.length <= MAX_PAIR_ARMS
  switch (access) {
    case 'ids':
    case 'time':
      return [f]
    case 'author':
      return f.authors!.map((a) => ({ ...f, authors: [a] }))
    case 'author-kind':
      if (!pairs(f.authors!.length)) return f.authors!.map((a) => ({ ...f, authors: [a] }))
      return f.authors!.flatMap((a) => kinds.map((k) => ({ ...f, authors: [a], kinds: [k] })))
    case 'kind':
      return kinds.map((k) => ({ ...f, kinds: [k] }))
    case 'tag':
      return tagArms(f, drivingTagOf(f)!)
  }
}

/** One arm per tag value; kinds stay a condition: no tags index starts with (value, kind) (sqlite-schema.ts V2). */
function tagArms(f: Filter, letter: string): Filter[] {
  return f.tags![letter]!.map((v) => ({ ...f, tags: { ...f.tags, [letter]: [v] } }))
}

const marks = (n: number) => Array.from({ length: n }, () => '?').join(',')

/**
 * Longer lists travel as one JSON parameter: SQLite allows at most 32766 bound parameters per statement,
 * and one text per list length would fill the statement cache. The index is still used value by value.
 */
const MAX_INLINE_LIST = 64

function inList(column: string, values: readonly SqlParam[]): [string, SqlParam[]] {
  if (values.length <= MAX_INLINE_LIST) return [`${column} IN (${marks(values.length)})`, [...values]]
  return [`${column} IN (SELECT value FROM json_each(?))`, [JSON.stringify(values)]]
}

// Past this many values a tag condition reads the event's own tags from its raw JSON, once per row, instead
// of seeking the tags primary key once per value.
const MAX_TAG_SEEKS = 16

/**
 * "The event `e` has a tag `name` with one of `values`". Every column of the tags primary key (community,
 * name, value, created_at, event_seq) is known from `e` and the value, so each value is one seek (schema V3
 * has no index by event).
 */
function hasTag(alias: string, name: string, values: readonly SqlParam[]): [string, SqlParam[]] {
  if (values.length <= MAX_TAG_SEEKS) {
    const [clause, params] = inList(`${alias}.value`, values)
    return [
      `EXISTS (SELECT 1 FROM tags ${alias} WHERE ${alias}.community = e.community AND ${alias}.name = ? AND ${clause} AND ${alias}.created_at = e.created_at AND ${alias}.event_seq = e.seq)`,
      [name, ...params],
    ]
  }
  // NIP-01 indexes a tag by its first two items, as the store's tag rows do (forEachIndexedTag)
  const j = `j${alias}`
  return [
    `EXISTS (SELECT 1 FROM json_each(e.raw, '$.tags') ${j} WHERE ${j}.value ->> 0 = ? AND ${j}.value ->> 1 IN (SELECT value FROM json_each(?)))`,
    [name, JSON.stringify(values)],
  ]
}

class SqlBuilder {
  readonly where: string[] = []
  readonly params: SqlParam[] = []
  add(clause: string, ...params: SqlParam[]): void {
    this.where.push(clause)
    this.params.push(...params)
  }
  addIn(column: string, values: readonly SqlParam[]): void {
    const [clause, params] = inList(column, values)
    this.add(clause, ...params)
  }
}

/** The FROM and WHERE of one filter's SELECT, and the order its index yields rows in. */
interface SelectParts {
  from: string
  where: string
  params: SqlParam[]
  /** NIP-01: newest first, ties lowest id first, on the driving table so the index yields that order */
  order: string
  /** the alias whose created_at drives: `t` for a tag, `e` otherwise */
  time: 't' | 'e'
  /** an event can come once per value: a driving tag with several values */
  repeats: boolean
}

function partsOf(community: string, f: Filter, opts: QueryOptions): SelectParts {
  const access = accessOf(f)
  const b = new SqlBuilder()
  b.add(`${BUDGET_FUNCTION}()`)
  const driving = access === 'tag' ? drivingTagOf(f)! : undefined
  let from: string
  if (driving !== undefined) {
    // CROSS JOIN fixes the loop order: tag rows come out of the tags index newest first, events by rowid
    from = 'tags t CROSS JOIN events e ON e.seq = t.event_seq'
    b.add('t.community = ? AND t.name = ?', community, driving)
    b.addIn('t.value', f.tags![driving]!)
    if (f.kinds) b.addIn('t.kind', f.kinds)
    addTimeRange(b, 't', f)
  } else {
    from = `events e INDEXED BY ${INDEX_OF[access as Exclude<Access, 'tag'>]}`
    b.add('e.community = ?', community)
    if (f.ids) b.addIn('e.id', f.ids)
    if (f.authors) b.addIn('e.pubkey', f.authors)
    if (f.kinds) b.addIn('e.kind', f.kinds)
    addTimeRange(b, 'e', f)
  }
  // NIP-40: an expired event is never served
  b.add('(e.expires_at IS NULL OR e.expires_at > ?)', opts.now)
  if (opts.authorOnly) addAuthorOnly(b, opts.authorOnly)
  if (opts.hiddenChannels && opts.hiddenChannels.length > 0) {
    const [inHidden, params] = hasTag('z', 'h', opts.hiddenChannels)
    b.add(`NOT ${inHidden}`, ...params)
  }
  for (const rule of opts.hiddenChannelState ?? []) {
    const [ofKinds, kindParams] = inList('e.kind', rule.kinds)
    const [inChannels, params] = hasTag('w', rule.tag, rule.channels)
    b.add(`NOT (${ofKinds} AND ${inChannels})`, ...kindParams, ...params)
  }
  for (const [letter, values] of Object.entries(f.tags ?? {})) {
    if (letter === driving) continue
    const [clause, params] = hasTag('x', letter, values)
    b.add(clause, ...params)
  }
  const time = driving !== undefined ? 't' : 'e'
  const repeats = driving !== undefined && f.tags![driving]!.length > 1
  return { from, where: b.where.join(' AND '), params: b.params, order: `${time}.created_at DESC, e.id ASC`, time, repeats }
}

/**
 * One SELECT for one filter (call `canMatch` first). `rows` selects what query() returns, ordered and
 * limited; `seqs` selects row keys only, every match, for COUNT.
 */
export function toSelectSql(community: string, f: Filter, opts: QueryOptions, what: 'rows' | 'seqs'): SqlQuery {
  const p = partsOf(community, f, opts)
  const select = what === 'rows' ? 'e.raw, e.id, e.created_at, e.kind' : 'e.seq'
  const sql = `SELECT ${select} FROM ${p.from} WHERE ${p.where}`
  // NIP-01: the limited set must be the newest ones
  if (what === 'rows' && f.limit !== undefined) return { sql: `${sql} ORDER BY ${p.order} LIMIT ?`, params: [...p.params, f.limit] }
  return { sql, params: p.params }
}

/** Author-only kinds (DMs, gift wraps) only for their author or a `p`-tagged reader. */
function addAuthorOnly(b: SqlBuilder, rule: NonNullable<QueryOptions['authorOnly']>): void {
  if (rule.kinds.length === 0) return
  const [notHidden, kindParams] = inList('e.kind', rule.kinds)
  if (rule.readers.length === 0) {
    b.add(`NOT ${notHidden}`, ...kindParams)
    return
  }
  const [byAuthor, authorParams] = inList('e.pubkey', rule.readers)
  const [byTag, tagParams] = hasTag('y', 'p', rule.readers)
  b.add(`(NOT ${notHidden} OR ${byAuthor} OR ${byTag})`, ...kindParams, ...authorParams, ...tagParams)
}

function addTimeRange(b: SqlBuilder, alias: string, f: Filter): void {
  // NIP-01: since <= created_at <= until, both inclusive
  if (f.since !== undefined) b.add(`${alias}.created_at >= ?`, f.since)
  if (f.until !== undefined) b.add(`${alias}.created_at <= ?`, f.until)
}

/**
 * NIP-45: distinct events matching any filter, each filter counting at most its `limit` (the caller clamps,
 * so a COUNT reads no further than the REQ with the same filters would). Several filters count the union of
 * their pages, each the newest `limit` as REQ returns them. undefined when no filter can match.
 */
export function toCountSql(community: string, filters: readonly Filter[], opts: QueryOptions): SqlQuery | undefined {
  const live = filters.filter(canMatch)
  const only = live.length === 1 ? live[0]! : undefined
  if (only?.limit !== undefined) {
    // one filter: only how many matter, not which, so no order: the scan stops after `limit` events
    const p = partsOf(community, only, opts)
    const sql = `SELECT count(*) AS n FROM (SELECT ${p.repeats ? 'DISTINCT e.seq' : '1'} FROM ${p.from} WHERE ${p.where} LIMIT ?)`
    return { sql, params: [...p.params, only.limit] }
  }
  const parts = live.map((f) => toCountPartSql(community, f, opts))
  if (parts.length === 0) return undefined
  // UNION ALL + DISTINCT: a tag join yields an event once per matching value, and filters overlap
  const sql = `SELECT COUNT(DISTINCT seq) AS n FROM (${parts.map((p) => p.sql).join(' UNION ALL ')})`
  return { sql, params: parts.flatMap((p) => p.params) }
}

/** The row keys one filter counts among several: every match, or its page of `limit`. */
function toCountPartSql(community: string, f: Filter, opts: QueryOptions): SqlQuery {
  if (f.limit === undefined) return toSelectSql(community, f, opts, 'seqs')
  const p = partsOf(community, f, opts)
  // an event matching several values of the driving tag must take one place in the page, not one per value
  const select = `${p.repeats ? 'DISTINCT ' : ''}e.seq AS seq, ${p.time}.created_at, e.id`
  const sql = `SELECT seq FROM (SELECT ${select} FROM ${p.from} WHERE ${p.where} ORDER BY ${p.order} LIMIT ?)`
  return { sql, params: [...p.params, f.limit] }
}
