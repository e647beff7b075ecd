// The write decisions of the SQLite store, shared by the writer thread (sqlite-write-worker.mjs) and the main
// thread (an in-memory database, or once the writer keeps failing to start). Plain .mjs so that it loads in a
// bare worker under tsx, vitest and node alike. What needs the event's parsed form (its address key, indexed
// tags, NIP-09 targets) is worked out on the main thread (sqlite-save.ts): a SavePlan is flat data.
//
// A batch runs inside one transaction, one plan after the other, so each decision sees the writes of the
// plans before it in the same batch (two versions of a replaceable event, a deletion and its target, the same
// event twice). Only the store decides these (docs/architecture.md §7). A batch also carries the jobs table's
// assignments (sqlite-job-writes.mjs), so they share the saves' writer and commits.

import { assign, JOB_WRITE_SQL, judgeJob, recordJob } from './sqlite-job-writes.mjs'

/** NIP-09's kind; a deletion is never blocked by a tombstone and never deleted by another deletion. */
const KIND_DELETION = 5

// The tags table's primary key of every indexed tag of the events `e` (a tag that was not indexed names no row)
const TAG_KEYS_OF = "SELECT e.community, j.value ->> 0, j.value ->> 1, e.created_at, e.seq FROM events e, json_each(e.raw, '$.tags') j"

/** Exported for the query-plan test: every lookup here must use an index. */
export const SAVE_SQL = {
  hasId: 'SELECT 1 FROM events WHERE community = ? AND id = ?',
  hasIdTombstone: 'SELECT 1 FROM deleted_ids WHERE community = ? AND event_id = ? AND pubkey = ?',
  hasAddressTombstone:
    'SELECT 1 FROM deleted_addresses WHERE community = ? AND kind = ? AND pubkey = ? AND d = ? AND until_created_at >= ?',
  versions: 'SELECT seq, id, created_at FROM events WHERE community = ? AND pubkey = ? AND kind = ? AND d_tag = ?',
  versionsUpTo: 'SELECT seq, id, created_at FROM events WHERE community = ? AND pubkey = ? AND kind = ? AND d_tag = ? AND created_at <= ?',
  ownEvent: 'SELECT seq, kind FROM events WHERE community = ? AND id = ? AND pubkey = ?',
  // An event's tag rows go before it, found by their primary key from its own tags (schema V3: no index on
  // event_seq for a cascade to use). Rows must not outlive their event: a seq is reused once the newest event
  // is gone.
  deleteEventTags: `DELETE FROM tags WHERE (community, name, value, created_at, event_seq) IN (${TAG_KEYS_OF} WHERE e.seq = ?)`,
  deleteEvent: 'DELETE FROM events WHERE seq = ?',
  insertEvent: 'INSERT INTO events (community, id, pubkey, kind, created_at, d_tag, expires_at, raw) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  tombstoneId: 'INSERT INTO deleted_ids (community, event_id, pubkey, deleted_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
  tombstoneAddress: `INSERT INTO deleted_addresses (community, kind, pubkey, d, until_created_at) VALUES (?, ?, ?, ?, ?)
    ON CONFLICT DO UPDATE SET until_created_at = max(until_created_at, excluded.until_created_at)`,
  // deleteEvents: outright, without a tombstone (a ban is remembered by the CommunityStore); tag rows first
  // (as deleteEventTags), and the versions of an address are its remaining rows
  deleteTagsByIds: `DELETE FROM tags WHERE (community, name, value, created_at, event_seq) IN (
    ${TAG_KEYS_OF} WHERE e.community = ? AND e.id IN (SELECT value FROM json_each(?)))`,
  deleteByIds: 'DELETE FROM events WHERE community = ? AND id IN (SELECT value FROM json_each(?)) RETURNING id',
  ...JOB_WRITE_SQL,
}

/** Tag rows per INSERT: an event's tags go in one statement (kind 3 contact lists in a few). */
export const TAG_ROWS_PER_INSERT = 32

/** A multi-row insert of `rows` tag rows; OR IGNORE: an event repeating a tag needs one index row for it. */
function insertTagsSql(rows) {
  const row = '(?, ?, ?, ?, ?, ?)'
  return `INSERT OR IGNORE INTO tags (community, name, value, kind, created_at, event_seq) VALUES ${Array.from({ length: rows }, () => row).join(', ')}`
}

/** 256 MiB, past what one checkpoint interval writes under heavy ingest: a file cut back each cycle would
 * grow again each cycle, and the writer's catch-up checkpoint (wal-checkpointer.ts) would take longer (fsync) */
const WAL_SIZE_LIMIT_BYTES = 256 * 1024 * 1024

/**
 * store.durability as SQLite's `synchronous`, in WAL mode. NORMAL fsyncs the WAL only at checkpoints: a commit is
 * in the WAL file the OS holds, so it survives a process crash, but the last ones before a power loss or kernel
 * crash may be lost; it keeps group commit cheap. FULL fsyncs the WAL at every commit, before OK.
 */
const SYNCHRONOUS_OF = { process: 'NORMAL', power: 'FULL' }

/** Sets `synchronous` for store.durability on a connection that commits (events, communities, channels, invites). */
export function applyDurability(db, durability) {
  const level = SYNCHRONOUS_OF[durability]
  // SQLite takes an unknown level without complaint: a bad value would pass unnoticed
  if (level === undefined) throw new Error(`unknown store durability: ${String(durability)}`)
  db.pragma(`synchronous = ${level}`)
}

/** The pragmas of every connection that commits to the file (events, communities, channels, invites). */
export function applyCommitPragmas(db, durability = 'process') {
  // WAL lets readers run while one batch commits
  db.pragma('journal_mode = WAL')
  applyDurability(db, durability)
  // another process (a CLI, a backup) may hold the write lock briefly; wait instead of failing at once
  db.pragma('busy_timeout = 5000')
}

/** The pragmas of every connection that writes events (the main thread's, the writer thread's). */
export function applyPragmas(db, durability = 'process') {
  applyCommitPragmas(db, durability)
  // the WAL file is cut back to this size when its writer restarts it; it kept its largest size before
  db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`)
}

export function createWriteRunner(db) {
  const s = {}
  for (const [name, sql] of Object.entries(SAVE_SQL)) s[name] = db.prepare(sql)
  for (const name of ['hasId', 'hasIdTombstone', 'hasAddressTombstone', 'deleteByIds']) s[name].pluck()
  // prepared on first use, one per row count: most events have a handful of tags
  const tagInserts = []
  s.insertTags = (rows) => {
    tagInserts[rows] ??= db.prepare(insertTagsSql(rows))
    return tagInserts[rows]
  }
  // one transaction per batch; better-sqlite3 rolls it back if any statement throws
  const commitBatch = db.transaction((batch) => batch.map((plan) => (plan.type === 'assign' ? assign(s, plan) : decide(s, plan))))
  const removeByIds = db.transaction((community, ids) => {
    s.deleteTagsByIds.run(community, ids)
    const removed = s.deleteByIds.all(community, ids)
    // a removed job request takes its job with it (only a request's id names a job)
    if (removed.length > 0) s.cancelJobs.run(community, JSON.stringify(removed))
    return removed
  })
  return {
    // IMMEDIATE: the write lock is taken before the first read, so another connection writing (the community
    // and channel stores, a CLI) is waited for (busy_timeout); a deferred transaction that reads first would
    // get SQLITE_BUSY at once when it tries to write, as WAL does not wait to upgrade a read transaction
    commit: (batch) => commitBatch.immediate(batch),
    deleteEvents(community, ids) {
      if (ids.length === 0) return []
      const removed = new Set(removeByIds.immediate(community, JSON.stringify(ids)))
      return [...new Set(ids)].filter((id) => removed.has(id))
    },
  }
}

function decide(s, plan) {
  const { community, id, pubkey, kind } = plan
  if (s.hasId.get(community, id) !== undefined) return { status: 'duplicate' }
  // after the duplicate check: a resend of a stored report answers duplicate, whatever the job did since
  const judged = judgeJob(s, plan)
  if (judged.refused) return judged.refused
  // NIP-09: deleting a deletion has no effect, so no tombstone ever blocks a kind 5
  if (kind !== KIND_DELETION && s.hasIdTombstone.get(community, id, pubkey) !== undefined) return { status: 'deleted' }
  const removedIds = []
  if (plan.dTag !== null) {
    const refused = replaceOlderVersions(s, plan, removedIds)
    if (refused) return refused
  }
  insertEvent(s, plan)
  if (plan.deletion) applyDeletion(s, plan, removedIds)
  recordJob(s, plan, judged.row)
  return { status: 'saved', removedIds }
}

// NIP-01: the newer created_at wins; on a tie the lowest id wins
const isNewer = (a, b) => a.created_at > b.created_at || (a.created_at === b.created_at && a.id < b.id)

function replaceOlderVersions(s, plan, removedIds) {
  const { community, kind, pubkey, created_at, dTag } = plan
  if (s.hasAddressTombstone.get(community, kind, pubkey, dTag, created_at) !== undefined) return { status: 'deleted' }
  const versions = s.versions.all(community, pubkey, kind, dTag)
  if (versions.some((v) => isNewer(v, plan))) return { status: 'superseded' }
  for (const v of versions) {
    removeEvent(s, v.seq)
    removedIds.push(v.id)
  }
  return undefined
}

function removeEvent(s, seq) {
  s.deleteEventTags.run(seq)
  s.deleteEvent.run(seq)
}

function insertEvent(s, p) {
  const { lastInsertRowid } = s.insertEvent.run(p.community, p.id, p.pubkey, p.kind, p.created_at, p.dTag, p.expiresAt, p.raw)
  const count = p.tags.length / 2
  for (let first = 0; first < count; first += TAG_ROWS_PER_INSERT) {
    const rows = Math.min(TAG_ROWS_PER_INSERT, count - first)
    const params = new Array(rows * 6)
    for (let r = 0; r < rows; r++) {
      const t = (first + r) * 2
      params[r * 6] = p.community
      params[r * 6 + 1] = p.tags[t]
      params[r * 6 + 2] = p.tags[t + 1]
      params[r * 6 + 3] = p.kind
      params[r * 6 + 4] = p.created_at
      params[r * 6 + 5] = lastInsertRowid
    }
    s.insertTags(rows).run(params)
  }
}

function applyDeletion(s, plan, removedIds) {
  const { community, pubkey, created_at } = plan
  for (const id of plan.deletion.ids) {
    // the author check is here: a deletion never removes someone else's event
    const target = s.ownEvent.get(community, id, pubkey)
    if (target && target.kind !== KIND_DELETION) {
      removeEvent(s, target.seq)
      removedIds.push(id)
      // a deleted request cancels its job, if it was dispatched (only a request's id names a job)
      s.cancelJob.run(community, id)
    }
    // remembered even when the target is unknown: it may arrive after its deletion
    s.tombstoneId.run(community, id, pubkey, created_at)
  }
  for (const a of plan.deletion.addresses) {
    // NIP-09: an `a` deletion covers the versions up to the deletion's created_at, not later ones
    for (const v of s.versionsUpTo.all(community, a.pubkey, a.kind, a.d, created_at)) {
      removeEvent(s, v.seq)
      removedIds.push(v.id)
    }
    s.tombstoneAddress.run(community, a.kind, a.pubkey, a.d, created_at)
  }
}
