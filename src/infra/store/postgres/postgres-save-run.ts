import type { VerifiedEvent } from '../../../protocols/nip01/event.js'
import { expirationOf } from '../../../protocols/nip40.js'
import { forEachIndexedTag, type SaveOutcome } from '../event-store.js'
import type { JobWrite } from '../job-ledger.js'
import { toIndexText } from './postgres-schema.js'

/**
 * A run of consecutive regular events in a PostgreSQL batch, saved by one multi-row statement (postgres-save.ts
 * cuts the batch into runs). Ingest is CPU-bound in the driver and the server, and the per-statement cost is
 * most of the per-event cost; a run holds no event that could change another's outcome, so deciding them
 * together is the same as deciding them one after the other.
 */

/** One event to save, as a batch (postgres-save.ts) and its runs hold it. */
export interface SaveRequest {
  community: string
  event: VerifiedEvent
  raw: string
  /** what the event does to the jobs table (postgres-job-writes.ts) */
  job?: JobWrite
}

// Regular events only (not kind 5, not replaceable or addressable): none in a run is a deletion, none has an
// address, and no id appears twice (planBatch), so each row is decided exactly as SAVE_EVENT decides it.
// Rows are numbered by their place in the run; $8 gives each tag its event's number. A blocked event answers
// `duplicate` when its id is stored anyway: the EXISTS reads the statement's snapshot, which holds what
// earlier statements wrote but not this statement's own inserts.
// $7 is the run's raw JSON joined by RAW_SEPARATOR, not a text[]: an array literal escapes every `"` of every
// event on the node and unescapes it on the server, CPU paid on both sides for every event saved.
export const SAVE_REGULAR = `
WITH judged AS (
  SELECT b.*, EXISTS (SELECT 1 FROM deleted_ids x
    WHERE x.community = b.community AND x.event_id = b.id AND x.pubkey = b.pubkey) AS blocked
  FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::int8[], $6::int8[], string_to_array($7::text, E'\\x01'))
    WITH ORDINALITY AS b (community, id, pubkey, kind, created_at, expires_at, raw, n)
), inserted AS (
  INSERT INTO events (community, id, pubkey, kind, created_at, expires_at, raw)
  SELECT community, id, pubkey, kind, created_at, expires_at, raw FROM judged WHERE NOT blocked ORDER BY n
  ON CONFLICT (community, id) DO NOTHING
  RETURNING seq, community, id
), tagged AS (
  INSERT INTO tags (event_seq, name, value, community, kind, created_at)
  SELECT i.seq, t.name, t.value, j.community, j.kind, j.created_at
  FROM unnest($8::int8[], $9::text[], $10::text[]) AS t (n, name, value)
  JOIN judged j ON j.n = t.n
  JOIN inserted i ON i.community = j.community AND i.id = j.id
  ON CONFLICT DO NOTHING
)
SELECT i.seq IS NOT NULL AS saved,
  j.blocked AND NOT EXISTS (SELECT 1 FROM events e WHERE e.community = j.community AND e.id = j.id) AS deleted
FROM judged j LEFT JOIN inserted i ON i.community = j.community AND i.id = j.id
ORDER BY j.n`

/**
 * U+0001 cannot occur in JSON text (RFC 8259: control characters only escaped inside strings, and outside them
 * only space, tab, LF and CR), so it cuts the joined raws exactly. postgres-save.ts saves a raw that holds one
 * anyway (not JSON: a bug upstream) on its own, never in a run.
 */
export const RAW_SEPARATOR = '\x01'

export interface Statement {
  sql: string
  params: unknown[]
}

export type Row = Record<string, unknown>

/** A stretch of the batch (one event, or a run of regular ones): its statements, the lock keys it needs, and
 * how to read the outcomes of its events, in order, from the statements' results. */
export interface PipelinedPlan {
  statements: Statement[]
  lockKeys: string[]
  outcomes(results: Row[][]): SaveOutcome[]
}

/**
 * One event whose statements depend on what an earlier one read (postgres-job-writes.ts): `decide` sends them
 * through `run` one round trip after another, and the batch sends what follows it only once it is decided.
 */
export interface SteppedPlan {
  lockKeys: string[]
  decide(run: (s: Statement) => Promise<Row[]>): Promise<SaveOutcome[]>
}

export type Plan = PipelinedPlan | SteppedPlan

export const idLockKey = (community: string, id: string) => `e\0${community}\0${id}`

export function planRegularRun(run: readonly SaveRequest[]): PipelinedPlan {
  const events = run.map((r) => r.event)
  const tagEvents: number[] = []
  const names: string[] = []
  const values: string[] = []
  for (const [i, e] of events.entries()) {
    forEachIndexedTag(e, (name, value) => {
      // WITH ORDINALITY numbers the run's rows from 1
      tagEvents.push(i + 1)
      names.push(name)
      values.push(toIndexText(value))
    })
  }
  const params = [
    run.map((r) => r.community),
    events.map((e) => e.id),
    events.map((e) => e.pubkey),
    events.map((e) => e.kind),
    events.map((e) => e.created_at),
    events.map((e) => expirationOf(e) ?? null),
    run.map((r) => r.raw).join(RAW_SEPARATOR),
    tagEvents,
    names,
    values,
  ]
  return {
    statements: [{ sql: SAVE_REGULAR, params }],
    lockKeys: run.map((r) => idLockKey(r.community, r.event.id)),
    outcomes([rows]) {
      if (rows?.length !== run.length) throw new Error(`SAVE_REGULAR answered ${rows?.length} rows for ${run.length} events`)
      return rows.map((r): SaveOutcome => {
        if (r.saved) return { status: 'saved', removedIds: [] }
        // not inserted and not `deleted`: stored already, or by another writer since (ON CONFLICT DO NOTHING)
        return r.deleted ? { status: 'deleted' } : { status: 'duplicate' }
      })
    },
  }
}
