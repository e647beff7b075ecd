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
 * With a `limit`, a filter is read value by value of its driving list (see `valueListsOf`), in one statement:
 * the list is one JSON parameter joined through json_each, and each value is an equality on the index prefix,
 * so the index yields its rows newest first and its read stops after `limit` rows. The filter's answer is the
 * top `limit` of the union of the values' pages (an event in the overall top N is in the top N of its own
 * value), so a query reads at most values × limit rows, and its access lists (hidden channels, readers) are
 * bound once, not once per value.
 *
 * Shapes that degrade (read every matching row of the driving list before the limit applies):
 * - authors × kinds above MAX_PAIR_ARMS pairs: read author by author;
 * - tag values with kinds: read value by value, each value's rows newest first, skipping other kinds
 *   (a kind rare among the value's rows reads further);
 * - a filter with no limit (the caller clamps, so only internal callers do this);
 * - COUNT of one limited filter: it counts its first `limit` matches in index order, value after value, with
 *   no sort (only how many matter); with several filters each counts its page as REQ reads it;
 * - conditions outside the driving index that rarely match (an author's events with a rare tag, expired
 *   events, a narrow since/until on an author with a long history): the arm walks its range until `limit`
 *   rows qualify, at worst the whole range of that one value.
 * The read budget (rows examined, time) bounds every one of these.
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

/** One driving list read value by value: `column` is equal, in turn, to each of `values` (alias v0, v1, ...). */
interface ValueList {
  column: string
  values: SqlParam[]
}

/**
 * The driving lists a limited filter is read value by value from (see the file comment), or undefined when
 * one range in index order already yields its page: ids, time, or a single driving value.
 */
export function valueListsOf(f: Filter): ValueList[] | undefined {
  if (f.limit === undefined) return undefined
  const kinds = f.kinds ?? []
  const lists = ((): ValueList[] => {
    switch (accessOf(f)) {
      case 'ids':
      case 'time':
        return []
      case 'author':
        return [{ column: 'e.pubkey', values: f.authors! }]
      case 'author-kind':
        if (f.authors!.length * kinds.length > MAX_PAIR_ARMS) return [{ column: 'e.pubkey', values: f.authors! }]
        return [
          { column: 'e.pubkey', values: f.authors! },
          { column: 'e.kind', values: kinds },
        ]
      case 'kind':
        return [{ column: 'e.kind', values: kinds }]
      case 'tag':
        // kinds stay a condition: no tags index starts with (value, kind) (sqlite-schema.ts V2)
        return [{ column: 't.value', values: f.tags![drivingTagOf(f)!]! }]
    }
  })()
  return lists.reduce((n, l) => n * l.values.length, 1) > 1 ? lists : undefined
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

function partsOf(community: string, f: Filter, opts: QueryOptions, lists: readonly ValueList[] = []): SelectParts {
  const access = accessOf(f)
  const b = new SqlBuilder()
  b.add(`${BUDGET_FUNCTION}()`)
  // a driving column read value by value is equal to the current value of its list, not IN the whole list
  const inOrEach = (column: string, values: readonly SqlParam[]) => {
    const i = lists.findIndex((l) => l.column === column)
    if (i >= 0) b.add(`${column} = v${i}.value`)
    else b.addIn(column, values)
  }
  const driving = access === 'tag' ? drivingTagOf(f)! : undefined
  let from: string
  if (driving !== undefined) {
    // CROSS JOIN fixes the loop order: tag rows come out of the tags index newest first, events by rowid
    from = 'tags t CROSS JOIN events e ON e.seq = t.event_seq'
    b.add('t.community = ? AND t.name = ?', community, driving)
    inOrEach('t.value', f.tags![driving]!)
    if (f.kinds) b.addIn('t.kind', f.kinds)
    addTimeRange(b, 't', f)
  } else {
    from = `events e INDEXED BY ${INDEX_OF[access as Exclude<Access, 'tag'>]}`
    b.add('e.community = ?', community)
    if (f.ids) b.addIn('e.id', f.ids)
    if (f.authors) inOrEach('e.pubkey', f.authors)
    if (f.kinds) inOrEach('e.kind', f.kinds)
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
  const repeats = driving !== undefined && f.tags![driving]!.length > 1 && lists.length === 0
  return { from, where: b.where.join(' AND '), params: b.params, order: `${time}.created_at DESC, e.id ASC`, time, repeats }
}

/**
 * One SELECT for one filter (call `canMatch` first). `rows` selects what query() returns, ordered and
 * limited; `seqs` selects row keys only, every match, for COUNT.
 */
export function toSelectSql(community: string, f: Filter, opts: QueryOptions, what: 'rows' | 'seqs'): SqlQuery {
  const lists = what === 'rows' ? valueListsOf(f) : undefined
  if (lists) return toPerValueSql(community, f, opts, lists, 'o.raw, o.id, o.created_at, o.kind')
  const p = partsOf(community, f, opts)
  const select = what === 'rows' ? 'e.raw, e.id, e.created_at, e.kind' : 'e.seq'
  const sql = `SELECT ${select} FROM ${p.from} WHERE ${p.where}`
  // NIP-01: the limited set must be the newest ones
  if (what === 'rows' && f.limit !== undefined) return { sql: `${sql} ORDER BY ${p.order} LIMIT ?`, params: [...p.params, f.limit] }
  return { sql, params: p.params }
}

/**
 * A limited filter read value by value in one statement: the driving lists are JSON parameters joined with
 * json_each, and a correlated subquery reads each value's own range newest first up to `limit` (SQLite has no
 * LATERAL; a correlated IN re-runs per outer row). `o.seq IN (...)` keeps an event found through several
 * values once, and the outer ORDER BY / LIMIT picks the filter's page from the values' pages.
 */
function toPerValueSql(community: string, f: Filter, opts: QueryOptions, lists: readonly ValueList[], select: string): SqlQuery {
  const p = partsOf(community, f, opts, lists)
  const each = lists.map((_, i) => `json_each(?) v${i}`).join(' CROSS JOIN ')
  const perValue = `SELECT e.seq FROM ${p.from} WHERE ${p.where} ORDER BY ${p.order} LIMIT ?`
  const sql =
    `SELECT ${select} FROM events o WHERE o.seq IN ` +
    `(SELECT w.seq FROM ${each} CROSS JOIN events w WHERE w.seq IN (${perValue})) ORDER BY o.created_at DESC, o.id ASC LIMIT ?`
  return { sql, params: [...lists.map((l) => JSON.stringify(l.values)), ...p.params, f.limit!, f.limit!] }
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
  const lists = valueListsOf(f)
  if (lists) {
    const q = toPerValueSql(community, f, opts, lists, 'o.seq AS seq')
    return { sql: `SELECT seq FROM (${q.sql})`, params: q.params }
  }
  const p = partsOf(community, f, opts)
  // an event matching several values of the driving tag must take one place in the page, not one per value
  const select = `${p.repeats ? 'DISTINCT ' : ''}e.seq AS seq, ${p.time}.created_at, e.id`
  const sql = `SELECT seq FROM (SELECT ${select} FROM ${p.from} WHERE ${p.where} ORDER BY ${p.order} LIMIT ?)`
  return { sql, params: [...p.params, f.limit] }
}
