import { createHash } from 'node:crypto'
import postgres from 'postgres'
import { ROWS_BUDGET_FUNCTION } from './postgres-read-budget.js'

/**
 * Schema of the cluster event store. Every row is scoped by `community` and every lookup index starts with
 * it, as in sqlite-schema.ts. Text keys use COLLATE "C": NIP-01 breaks created_at ties by the lowest id in
 * byte order, and the database's default collation is whatever the operator created it with.
 *
 * - `versions`: one row per (community, pubkey, kind, d) naming the stored winner. The conditional upsert on
 *   its primary key is where "latest wins" is decided (architecture §7), so nodes racing on one address converge.
 *   Invariant: a row exists exactly when its winner is stored; deletions remove both together.
 * - `events.d_tag`: '' for replaceable kinds, the `d` key for addressable kinds, NULL for the rest.
 * - `tags`: single-letter tags only; `kind` and `created_at` are copied from the event so a tag lookup can
 *   read newest first inside the index and narrow by kind before touching `events`, as in SQLite. Since
 *   EVENTS_V3 without a foreign key: the statements that delete events delete their tag rows.
 * - `deleted_ids` / `deleted_addresses`: NIP-09 tombstones, kept after the target is gone.
 */
const EVENTS_V1 = `
CREATE TABLE events (
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  community TEXT COLLATE "C" NOT NULL,
  id TEXT COLLATE "C" NOT NULL,
  pubkey TEXT COLLATE "C" NOT NULL,
  kind INTEGER NOT NULL,
  created_at BIGINT NOT NULL,
  d_tag TEXT COLLATE "C",
  expires_at BIGINT,
  raw TEXT NOT NULL
);
CREATE UNIQUE INDEX events_by_id ON events (community, id);
CREATE INDEX events_by_time ON events (community, created_at DESC, id);
CREATE INDEX events_by_author ON events (community, pubkey, created_at DESC);
CREATE INDEX events_by_author_kind ON events (community, pubkey, kind, created_at DESC);
CREATE INDEX events_by_kind ON events (community, kind, created_at DESC);
CREATE INDEX events_by_address ON events (community, pubkey, kind, d_tag) WHERE d_tag IS NOT NULL;

-- the primary key also serves the ON DELETE CASCADE from events and the per-event EXISTS of a second tag
CREATE TABLE tags (
  event_seq BIGINT NOT NULL REFERENCES events (seq) ON DELETE CASCADE,
  name TEXT COLLATE "C" NOT NULL,
  value TEXT COLLATE "C" NOT NULL,
  community TEXT COLLATE "C" NOT NULL,
  kind INTEGER NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (event_seq, name, value)
);
CREATE INDEX tags_by_value ON tags (community, name, value, created_at DESC);
-- kinds + tag filters (kinds:[1], #t:[x]) read one (value, kind) range newest first
CREATE INDEX tags_by_value_kind ON tags (community, name, value, kind, created_at DESC);

CREATE TABLE versions (
  community TEXT COLLATE "C" NOT NULL,
  pubkey TEXT COLLATE "C" NOT NULL,
  kind INTEGER NOT NULL,
  d TEXT COLLATE "C" NOT NULL,
  event_id TEXT COLLATE "C" NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (community, pubkey, kind, d)
);

CREATE TABLE deleted_ids (
  community TEXT COLLATE "C" NOT NULL,
  event_id TEXT COLLATE "C" NOT NULL,
  pubkey TEXT COLLATE "C" NOT NULL,
  deleted_at BIGINT NOT NULL,
  PRIMARY KEY (community, event_id, pubkey)
);

CREATE TABLE deleted_addresses (
  community TEXT COLLATE "C" NOT NULL,
  kind INTEGER NOT NULL,
  pubkey TEXT COLLATE "C" NOT NULL,
  d TEXT COLLATE "C" NOT NULL,
  until_created_at BIGINT NOT NULL,
  PRIMARY KEY (community, kind, pubkey, d)
);
`

/**
 * As in SQLite (sqlite-schema.ts V2): every tags index costs each tag row an index insertion, the bulk of the
 * server's time per event; a tag query with kinds reads tags_by_value newest first and skips other kinds.
 */
const EVENTS_V2 = 'DROP INDEX IF EXISTS tags_by_value_kind;'

/**
 * The tags table without its foreign key: the check ran for every tag row inserted (a lookup and a key-share
 * lock of the event row; a visible share of the server's time under ingest). Each statement that deletes
 * events deletes their tag rows itself (postgres-save.ts), by the primary key, which starts with event_seq.
 * `seq` is an identity and never reused, so a missed row could not attach to another event.
 */
const EVENTS_V3 = 'ALTER TABLE tags DROP CONSTRAINT IF EXISTS tags_event_seq_fkey;'

/** The function every read statement counts its candidate rows with (postgres-read-budget.ts). */
const EVENTS_V4 = ROWS_BUDGET_FUNCTION

/**
 * The jobs table (job-ledger.ts), as in SQLite (sqlite-schema.ts V4): one row per dispatched job, by its request's
 * id, written in the transactions that save the events changing it. `jobs_open` serves `openJobs` oldest first and
 * holds only the open rows; its condition is job-fence.mjs's OPEN_STATES_SQL, written out (a shipped migration
 * never changes).
 */
const EVENTS_V5 = `
CREATE TABLE IF NOT EXISTS jobs (
  community TEXT COLLATE "C" NOT NULL,
  id TEXT COLLATE "C" NOT NULL,
  capability TEXT COLLATE "C" NOT NULL,
  requester TEXT COLLATE "C" NOT NULL,
  kind INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('queued', 'assigned', 'running', 'success', 'error', 'cancelled')),
  generation INTEGER NOT NULL,
  assignee TEXT COLLATE "C",
  attempts INTEGER NOT NULL,
  queued_at_ms BIGINT NOT NULL,
  deadline_at_ms BIGINT,
  PRIMARY KEY (community, id)
);
CREATE INDEX IF NOT EXISTS jobs_open ON jobs (community, capability, queued_at_ms, id) WHERE state IN ('queued', 'assigned', 'running');
`

/** EVENT_MIGRATIONS[i] takes the event schema from version i to i + 1. Append only. */
export const EVENT_MIGRATIONS: readonly string[] = [EVENTS_V1, EVENTS_V2, EVENTS_V3, EVENTS_V4, EVENTS_V5]

export type Sql = postgres.Sql

/**
 * A connection pool. BIGINT columns (created_at, seq, counts) come back as numbers: every value we store
 * is a safe integer (NIP-01 timestamps, row counters), and the merge code compares numbers.
 */
export function connectPostgres(url: string, max = 10, more: object = {}): Sql {
  return postgres(url, {
    max,
    onnotice: () => {},
    // a dead server must fail a ping or a commit within seconds, not after the driver's 30 s default
    connect_timeout: 10,
    types: { int8: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) } },
    // driver options its types leave out (`socket`, `max_pipeline`: postgres-read-pool.ts)
    ...more,
  })
}

/**
 * Upper bound on one store round trip, as connect_timeout bounds a connect. postgres.js 3.4 has no query
 * timeout, and when a connection is accepted and then closed before its startup handshake (a pgbouncer,
 * HAProxy or Service in front of a dead server) it reconnects forever, cancelling connect_timeout at each
 * close: the query, and the actor awaiting it, would wait out the whole outage (test/e2e/cluster-faults).
 * The abandoned query may still run once the server is back; callers already treat a failed write as unknown.
 */
export const STORE_DEADLINE_MS = 10_000

/** A store call that passed its deadline. `pending` is the call itself, which may still complete (a commit may still land). */
export class DeadlineError<T = unknown> extends Error {
  constructor(
    what: string,
    ms: number,
    readonly pending: Promise<T>,
  ) {
    super(`${what}: no answer from PostgreSQL within ${ms} ms`)
    this.name = 'DeadlineError'
  }
}

export function withDeadline<T>(what: string, pending: PromiseLike<T>, ms = STORE_DEADLINE_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const call = Promise.resolve(pending)
  // whatever the abandoned call ends with later must not surface as an unhandled rejection
  call.catch(() => {})
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineError(what, ms, call)), ms)
  })
  return Promise.race([call, late]).finally(() => clearTimeout(timer))
}

// one key for every component: they share the apiary_schema table, which two creators would race on
const SCHEMA_LOCK_KEY = 0x417069617279 // "Apiary"

/**
 * Brings `component`'s schema to the latest version. Idempotent; when several nodes start at once the
 * advisory lock makes one migrate while the others wait, then find nothing left to do. DDL is transactional
 * in PostgreSQL, so a failed step leaves the previous version intact.
 */
export async function migrate(sql: Sql, component: string, migrations: readonly string[]): Promise<void> {
  await sql.begin(async (tx) => {
    await tx.unsafe('SELECT pg_advisory_xact_lock($1)', [SCHEMA_LOCK_KEY])
    await tx.unsafe(`CREATE TABLE IF NOT EXISTS apiary_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL)`)
    const rows = await tx.unsafe('SELECT version FROM apiary_schema WHERE component = $1', [component])
    const current = (rows[0]?.version as number | undefined) ?? 0
    if (current > migrations.length) {
      throw new Error(`${component} schema version ${current} is newer than this build (${migrations.length})`)
    }
    for (let v = current; v < migrations.length; v++) await tx.unsafe(migrations[v]!)
    await tx.unsafe(
      `INSERT INTO apiary_schema (component, version) VALUES ($1, $2)
       ON CONFLICT (component) DO UPDATE SET version = excluded.version`,
      [component, migrations.length],
    )
  })
}

// btree entries are limited to ~2.7 kB; 512 bytes keeps a tag index row far below that
const MAX_INDEXED_BYTES = 512
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/
// marks a digest; values starting with it are digested too, so the mapping stays one-to-one
const DIGEST_MARK = '\u0001'

/**
 * How a tag value or `d` is stored in an indexed column, and looked up. PostgreSQL text cannot hold NUL,
 * an index row cannot hold a long value, and a lone surrogate would be re-encoded as U+FFFD (merging two
 * distinct values): such values are stored as a digest. Without this, one client's odd tag would fail the
 * whole batch transaction for everyone in it.
 */
export function toIndexText(value: string): string {
  const plain =
    !value.startsWith(DIGEST_MARK) && !value.includes('\0') && !LONE_SURROGATE.test(value) && Buffer.byteLength(value) <= MAX_INDEXED_BYTES
  // JSON.stringify escapes lone surrogates, so distinct values hash distinct bytes
  return plain ? value : DIGEST_MARK + createHash('sha256').update(JSON.stringify(value)).digest('hex')
}
