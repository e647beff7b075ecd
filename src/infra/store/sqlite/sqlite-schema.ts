import type { Database } from 'better-sqlite3'

/**
 * Schema of the embedded event store. Every row is scoped by `community`, and every index starts with it, so
 * one tenant's queries never touch another tenant's rows.
 *
 * - `events.d_tag`: '' for replaceable kinds, the `d` value for addressable kinds, NULL for the rest; the
 *   partial index `events_by_address` is the (community, pubkey, kind, d) key that "latest wins" needs.
 * - `tags`: single-letter tags only (NIP-01 indexes nothing else). `kind` and `created_at` are copied from the
 *   event so a tag lookup can also narrow by kind and time inside the tags table, before touching `events`.
 *   Since V3 no foreign key: the store deletes an event's tag rows itself.
 * - `deleted_ids` / `deleted_addresses`: NIP-09 tombstones, kept after the target is gone so that a later
 *   arrival of a deleted event answers `deleted` instead of reappearing.
 */
const V1 = `
CREATE TABLE IF NOT EXISTS events (
  seq INTEGER PRIMARY KEY,
  community TEXT NOT NULL,
  id TEXT NOT NULL,
  pubkey TEXT NOT NULL,
  kind INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  d_tag TEXT,
  expires_at INTEGER,
  raw TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS events_by_id ON events (community, id);
CREATE INDEX IF NOT EXISTS events_by_time ON events (community, created_at DESC, id);
CREATE INDEX IF NOT EXISTS events_by_author ON events (community, pubkey, created_at DESC);
CREATE INDEX IF NOT EXISTS events_by_author_kind ON events (community, pubkey, kind, created_at DESC);
CREATE INDEX IF NOT EXISTS events_by_kind ON events (community, kind, created_at DESC);
CREATE INDEX IF NOT EXISTS events_by_address ON events (community, pubkey, kind, d_tag) WHERE d_tag IS NOT NULL;

CREATE TABLE IF NOT EXISTS tags (
  community TEXT NOT NULL,
  name TEXT NOT NULL,
  value TEXT NOT NULL,
  kind INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  event_seq INTEGER NOT NULL REFERENCES events (seq) ON DELETE CASCADE,
  PRIMARY KEY (community, name, value, created_at, event_seq)
) WITHOUT ROWID;
-- kinds + tag filters (kinds:[1], #t:[x]) read one (value, kind) range newest first
CREATE INDEX IF NOT EXISTS tags_by_value_kind ON tags (community, name, value, kind, created_at);
-- the cascade from events looks tags up by event_seq; without this index every delete would scan tags
CREATE INDEX IF NOT EXISTS tags_by_event ON tags (event_seq);

CREATE TABLE IF NOT EXISTS deleted_ids (
  community TEXT NOT NULL,
  event_id TEXT NOT NULL,
  pubkey TEXT NOT NULL,
  deleted_at INTEGER NOT NULL,
  PRIMARY KEY (community, event_id, pubkey)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS deleted_addresses (
  community TEXT NOT NULL,
  kind INTEGER NOT NULL,
  pubkey TEXT NOT NULL,
  d TEXT NOT NULL,
  until_created_at INTEGER NOT NULL,
  PRIMARY KEY (community, kind, pubkey, d)
) WITHOUT ROWID;
`

/**
 * On the ingest corpus (bench/corpus.ts, ~5 tag rows per event) each commit writes every page it dirtied to
 * the WAL, and a tag row lands on a random page of each tags index it is in, so the commit cost is mostly
 * pages, and tags_by_value_kind was a large share of the store's cost per event (bench `store`). A tag
 * query with kinds reads the value's rows newest first from the primary key and skips other kinds there
 * (`kind` is in the row, no event lookup): a kind that is rare among a value's rows reads further, bounded by
 * the read budget like every scan.
 */
const V2 = 'DROP INDEX IF EXISTS tags_by_value_kind;'

/**
 * The tags table without its foreign key and without tags_by_event, the index the cascade needed: each tag row
 * cost an entry there too, a large share of the store's cost per corpus event (bench `store`). An event's tag rows
 * are deleted by their primary key, from the tags of the event itself (sqlite-write-core's
 * deleteEventTags). SQLite cannot drop a constraint, so the table is copied (in primary-key order: one pass
 * over the old table, appends to the new one).
 */
const V3 = `
CREATE TABLE tags_v3 (
  community TEXT NOT NULL,
  name TEXT NOT NULL,
  value TEXT NOT NULL,
  kind INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  event_seq INTEGER NOT NULL,
  PRIMARY KEY (community, name, value, created_at, event_seq)
) WITHOUT ROWID;
INSERT INTO tags_v3 SELECT community, name, value, kind, created_at, event_seq FROM tags;
DROP TABLE tags;
ALTER TABLE tags_v3 RENAME TO tags;
`

/**
 * The jobs table (job-ledger.ts): one row per dispatched job, by its request's id, written in the transactions
 * that save the events changing it. `jobs_open` serves `openJobs` (a dispatcher's queue, oldest first) and holds
 * only the open rows, so ended jobs cost it nothing. Its condition is job-fence.mjs's OPEN_STATES_SQL, written
 * out (a shipped migration never changes): SQLite uses a partial index only for a query that repeats it.
 */
const V4 = `
CREATE TABLE IF NOT EXISTS jobs (
  community TEXT NOT NULL,
  id TEXT NOT NULL,
  capability TEXT NOT NULL,
  requester TEXT NOT NULL,
  kind INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('queued', 'assigned', 'running', 'success', 'error', 'cancelled')),
  generation INTEGER NOT NULL,
  assignee TEXT,
  attempts INTEGER NOT NULL,
  queued_at_ms INTEGER NOT NULL,
  deadline_at_ms INTEGER,
  PRIMARY KEY (community, id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS jobs_open ON jobs (community, capability, queued_at_ms, id) WHERE state IN ('queued', 'assigned', 'running');
`

/** MIGRATIONS[i] takes the schema from user_version i to i + 1. Append only; never edit a shipped entry. */
const MIGRATIONS: readonly string[] = [V1, V2, V3, V4]

export const SCHEMA_VERSION = MIGRATIONS.length

// the writer thread opens its own connection with the same pragmas
export { applyPragmas } from './sqlite-write-core.mjs'

/** Idempotent: safe on a fresh file, on an up-to-date one, and when two processes open the file at once. */
export function migrate(db: Database): void {
  const step = db.transaction(() => {
    const current = db.pragma('user_version', { simple: true }) as number
    if (current > SCHEMA_VERSION) {
      throw new Error(`database schema version ${current} is newer than this build (${SCHEMA_VERSION})`)
    }
    for (let v = current; v < SCHEMA_VERSION; v++) db.exec(MIGRATIONS[v]!)
    db.pragma(`user_version = ${SCHEMA_VERSION}`)
  })
  // IMMEDIATE takes the write lock before reading user_version, so two processes cannot both migrate
  step.immediate()
}
