import type { Database, Statement } from 'better-sqlite3'
import type { VerifiedEvent } from '../../protocols/nip01/event.js'
import { dTagOf, KIND_DELETION, kindClass } from '../../protocols/nip01/kinds.js'
import { deletionTargets } from '../../protocols/nip09.js'
import { expirationOf } from '../../protocols/nip40.js'
import { forEachIndexedTag, type SaveOutcome } from './event-store.js'

/**
 * The write decisions of the SQLite store. They run inside the batch transaction, one event after the other,
 * so each decision sees the writes of the events before it in the same batch (two versions of a replaceable
 * event, a deletion and its target, the same event twice). Only the store decides these (DESIGN §7).
 */

export interface SaveRequest {
  community: string
  event: VerifiedEvent
  raw: string
}

interface Version {
  seq: number
  id: string
  created_at: number
}

type Statements = ReturnType<typeof prepareStatements>

/** Exported for the query-plan test: every lookup here must use an index. */
export const SAVE_SQL = {
  hasId: 'SELECT 1 FROM events WHERE community = ? AND id = ?',
  hasIdTombstone: 'SELECT 1 FROM deleted_ids WHERE community = ? AND event_id = ? AND pubkey = ?',
  hasAddressTombstone:
    'SELECT 1 FROM deleted_addresses WHERE community = ? AND kind = ? AND pubkey = ? AND d = ? AND until_created_at >= ?',
  versions: 'SELECT seq, id, created_at FROM events WHERE community = ? AND pubkey = ? AND kind = ? AND d_tag = ?',
  versionsUpTo:
    'SELECT seq, id, created_at FROM events WHERE community = ? AND pubkey = ? AND kind = ? AND d_tag = ? AND created_at <= ?',
  ownEvent: 'SELECT seq, kind FROM events WHERE community = ? AND id = ? AND pubkey = ?',
  // tags rows follow through ON DELETE CASCADE
  deleteEvent: 'DELETE FROM events WHERE seq = ?',
  insertEvent:
    'INSERT INTO events (community, id, pubkey, kind, created_at, d_tag, expires_at, raw) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  // OR IGNORE: an event repeating a tag needs one index row for it
  insertTag:
    'INSERT OR IGNORE INTO tags (community, name, value, kind, created_at, event_seq) VALUES (?, ?, ?, ?, ?, ?)',
  tombstoneId:
    'INSERT INTO deleted_ids (community, event_id, pubkey, deleted_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
  tombstoneAddress: `INSERT INTO deleted_addresses (community, kind, pubkey, d, until_created_at) VALUES (?, ?, ?, ?, ?)
    ON CONFLICT DO UPDATE SET until_created_at = max(until_created_at, excluded.until_created_at)`,
  // EventStore.deleteEvents: outright, without a tombstone (a ban is remembered by the CommunityStore);
  // tags rows follow through ON DELETE CASCADE, and the versions of an address are its remaining rows
  deleteByIds: 'DELETE FROM events WHERE community = ? AND id IN (SELECT value FROM json_each(?)) RETURNING id',
} as const

function prepareStatements(db: Database) {
  const s = (sql: string): Statement => db.prepare(sql)
  return {
    hasId: s(SAVE_SQL.hasId).pluck(),
    hasIdTombstone: s(SAVE_SQL.hasIdTombstone).pluck(),
    hasAddressTombstone: s(SAVE_SQL.hasAddressTombstone).pluck(),
    versions: s(SAVE_SQL.versions),
    versionsUpTo: s(SAVE_SQL.versionsUpTo),
    ownEvent: s(SAVE_SQL.ownEvent),
    deleteEvent: s(SAVE_SQL.deleteEvent),
    insertEvent: s(SAVE_SQL.insertEvent),
    insertTag: s(SAVE_SQL.insertTag),
    tombstoneId: s(SAVE_SQL.tombstoneId),
    tombstoneAddress: s(SAVE_SQL.tombstoneAddress),
  }
}

/** EventStore.deleteEvents: the ids among `ids` that were stored, in the order given; one statement, so atomic. */
export function prepareDeleteEvents(db: Database): (community: string, ids: readonly string[]) => string[] {
  const deleteByIds = db.prepare(SAVE_SQL.deleteByIds).pluck()
  return (community, ids) => {
    if (ids.length === 0) return []
    const removed = new Set(deleteByIds.all(community, JSON.stringify(ids)) as string[])
    return [...new Set(ids)].filter((id) => removed.has(id))
  }
}

/** Prepares the statements once; the returned function must run inside a transaction. */
export function prepareSave(db: Database): (req: SaveRequest) => SaveOutcome {
  const s = prepareStatements(db)
  return (req) => decide(s, req)
}

function decide(s: Statements, { community, event, raw }: SaveRequest): SaveOutcome {
  if (s.hasId.get(community, event.id) !== undefined) return { status: 'duplicate' }
  // NIP-09: deleting a deletion has no effect, so no tombstone ever blocks a kind 5
  const blockable = event.kind !== KIND_DELETION
  if (blockable && s.hasIdTombstone.get(community, event.id, event.pubkey) !== undefined) return { status: 'deleted' }
  const removedIds: string[] = []
  const dTag = addressKeyOf(event)
  if (dTag !== null) {
    const refused = replaceOlderVersions(s, community, event, dTag, removedIds)
    if (refused) return refused
  }
  insertEvent(s, community, event, raw, dTag)
  if (event.kind === KIND_DELETION) applyDeletion(s, community, event, removedIds)
  return { status: 'saved', removedIds }
}

/** The `d` part of the replaceable/addressable key: '' for replaceable kinds, null for regular ones. */
function addressKeyOf(event: VerifiedEvent): string | null {
  // ephemeral kinds never get here: save() refuses them before queueing
  const cls = kindClass(event.kind)
  if (cls === 'addressable') return dTagOf(event)
  return cls === 'replaceable' ? '' : null
}

// NIP-01: the newer created_at wins; on a tie the lowest id wins
const isNewer = (a: Version, b: Pick<Version, 'id' | 'created_at'>) =>
  a.created_at > b.created_at || (a.created_at === b.created_at && a.id < b.id)

function replaceOlderVersions(
  s: Statements,
  community: string,
  event: VerifiedEvent,
  d: string,
  removedIds: string[],
): SaveOutcome | undefined {
  const { kind, pubkey, created_at } = event
  if (s.hasAddressTombstone.get(community, kind, pubkey, d, created_at) !== undefined) return { status: 'deleted' }
  const versions = s.versions.all(community, pubkey, kind, d) as Version[]
  if (versions.some((v) => isNewer(v, event))) return { status: 'superseded' }
  for (const v of versions) {
    s.deleteEvent.run(v.seq)
    removedIds.push(v.id)
  }
  return undefined
}

function insertEvent(s: Statements, community: string, e: VerifiedEvent, raw: string, dTag: string | null): void {
  const expiresAt = expirationOf(e) ?? null
  const { lastInsertRowid } = s.insertEvent.run(community, e.id, e.pubkey, e.kind, e.created_at, dTag, expiresAt, raw)
  forEachIndexedTag(e, (name, value) => s.insertTag.run(community, name, value, e.kind, e.created_at, lastInsertRowid))
}

function applyDeletion(s: Statements, community: string, deletion: VerifiedEvent, removedIds: string[]): void {
  const { pubkey, created_at } = deletion
  const targets = deletionTargets(deletion)
  for (const id of targets.ids) {
    // the author check is here: a deletion never removes someone else's event
    const target = s.ownEvent.get(community, id, pubkey) as { seq: number; kind: number } | undefined
    if (target && target.kind !== KIND_DELETION) {
      s.deleteEvent.run(target.seq)
      removedIds.push(id)
    }
    // remembered even when the target is unknown: it may arrive after its deletion
    s.tombstoneId.run(community, id, pubkey, created_at)
  }
  for (const a of targets.addresses) {
    const cls = kindClass(a.kind)
    if (cls !== 'replaceable' && cls !== 'addressable') continue
    // NIP-09: an `a` deletion covers the versions up to the deletion's created_at, not later ones
    for (const v of s.versionsUpTo.all(community, a.pubkey, a.kind, a.d, created_at) as Version[]) {
      s.deleteEvent.run(v.seq)
      removedIds.push(v.id)
    }
    s.tombstoneAddress.run(community, a.kind, a.pubkey, a.d, created_at)
  }
}
