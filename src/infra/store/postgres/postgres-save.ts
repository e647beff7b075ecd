import { createHash } from 'node:crypto'
import type { VerifiedEvent } from '../../../protocols/nip01/event.js'
import { dTagOf, KIND_DELETION, kindClass } from '../../../protocols/nip01/kinds.js'
import { deletionTargets } from '../../../protocols/nip09.js'
import { expirationOf } from '../../../protocols/nip40.js'
import { forEachIndexedTag, type SaveOutcome } from '../event-store.js'
import type { JobState } from '../job-ledger.js'
import type { SessionFence } from '../session-fence.js'
import { CANCEL_REMOVED_STEP, ENQUEUE_STEP, LOCK_JOB, MOVE_STEP, planJudgedSave } from './postgres-job-writes.js'
import {
  idLockKey,
  type PipelinedPlan,
  type Plan,
  planRegularRun,
  RAW_SEPARATOR,
  type Row,
  SAVE_REGULAR,
  type SaveRequest,
  type Statement,
} from './postgres-save-run.js'
import { type Sql, toIndexText } from './postgres-schema.js'
import { asFenced, CLAIM_SESSION, claimParams } from './postgres-session-fence.js'

/**
 * The write decisions of the PostgreSQL store, made by the database so that nodes sharing it agree (architecture §7).
 *
 * A batch is one transaction. It first takes exclusive transaction-scoped advisory locks on every event id
 * and address the batch touches, in one global order (sorted keys), so two nodes writing the same id or
 * address serialize instead of deadlocking, and a deletion and its target arriving on two nodes at once see
 * each other (without the lock, each would commit blind to the other's uncommitted row). Every statement then
 * runs in READ COMMITTED after those locks, so it sees whatever the other node committed.
 *
 * Each event's decision is a fixed list of statements that depend on earlier ones only through the database,
 * so the whole batch is pipelined: one round trip per batch, not per event. The exception is a job's report or
 * close, judged in JavaScript against its job's row (postgres-job-writes.ts): the batch waits for that row and
 * sends what follows once it is decided, a round trip or two more. Each statement sees the writes of
 * the statements before it, so events in one batch are decided in arrival order, as in SQLite. A run of
 * consecutive regular events shares one multi-row statement (SAVE_REGULAR): ingest is CPU-bound in the driver
 * and the server, and the per-statement cost is most of the per-event cost. A run holds no event that could
 * change another's outcome, so deciding them together is the same as deciding them one after the other.
 */

// NIP-01: the newer created_at wins; on a tie the lowest id wins. The upsert's WHERE is the whole rule.
const SAVE_STEPS = `
blocked AS (
  SELECT $11::bool AND (
    EXISTS (SELECT 1 FROM deleted_ids WHERE community = $1 AND event_id = $2 AND pubkey = $3)
    OR ($6::text IS NOT NULL AND EXISTS (SELECT 1 FROM deleted_addresses
      WHERE community = $1 AND kind = $4 AND pubkey = $3 AND d = $6 AND until_created_at >= $5))
  ) AS yes
), duplicate AS (
  SELECT EXISTS (SELECT 1 FROM events WHERE community = $1 AND id = $2) AS yes
), won AS (
  INSERT INTO versions (community, pubkey, kind, d, event_id, created_at)
  SELECT $1, $3, $4, $6, $2, $5
  WHERE $6::text IS NOT NULL AND NOT (SELECT yes FROM blocked) AND NOT (SELECT yes FROM duplicate)
  ON CONFLICT (community, pubkey, kind, d) DO UPDATE SET event_id = excluded.event_id, created_at = excluded.created_at
  WHERE excluded.created_at > versions.created_at
     OR (excluded.created_at = versions.created_at AND excluded.event_id < versions.event_id)
  RETURNING 1
), inserted AS (
  INSERT INTO events (community, id, pubkey, kind, created_at, d_tag, expires_at, raw)
  SELECT $1, $2, $3, $4, $5, $6, $7, $8
  WHERE NOT (SELECT yes FROM blocked) AND ($6::text IS NULL OR EXISTS (SELECT 1 FROM won))
  ON CONFLICT (community, id) DO NOTHING
  RETURNING seq
), tagged AS (
  INSERT INTO tags (event_seq, name, value, community, kind, created_at)
  SELECT inserted.seq, t.name, t.value, $1, $4, $5 FROM inserted, unnest($9::text[], $10::text[]) AS t (name, value)
  ON CONFLICT DO NOTHING
)`
const SAVED = 'SELECT (SELECT yes FROM duplicate) AS duplicate, (SELECT yes FROM blocked) AS blocked, (SELECT seq FROM inserted) AS seq'
const SAVE_EVENT = `WITH ${SAVE_STEPS}\n${SAVED}`
// a job's row goes in, or moves, with its event, and only when the statement stored it (postgres-job-writes.ts)
const SAVE_AND_ENQUEUE = `WITH ${SAVE_STEPS}, ${ENQUEUE_STEP}\n${SAVED}`
const SAVE_AND_MOVE = `WITH ${SAVE_STEPS}, ${MOVE_STEP}\n${SAVED}`

// A separate statement, so its snapshot includes what other nodes committed while the upsert waited.
// Deletes only while `versions` names this event: a superseded or duplicate save removes nothing.
// Every statement that deletes events deletes their tag rows in the same statement, with this CTE over its
// `removed` (schema version 3: no foreign key, whose per-row check cost the server on every tag row inserted);
// the tags primary key starts with event_seq.
const UNTAG_REMOVED = 'untagged AS (DELETE FROM tags t USING removed WHERE t.event_seq = removed.seq)'

const DELETE_LOSERS = `
WITH removed AS (
  DELETE FROM events WHERE community = $1 AND pubkey = $2 AND kind = $3 AND d_tag = $4 AND id <> $5
    AND EXISTS (SELECT 1 FROM versions WHERE community = $1 AND pubkey = $2 AND kind = $3 AND d = $4 AND event_id = $5)
  RETURNING seq, id
), ${UNTAG_REMOVED}
SELECT id FROM removed`

// NIP-09: only the deleter's own events, never a deletion; the tombstone is kept even for an unknown target,
// which may arrive after its deletion. Removing the `versions` row keeps the invariant of postgres-schema.ts.
const DELETE_BY_ID = `
WITH target AS (SELECT DISTINCT unnest($3::text[]) AS id),
removed AS (
  DELETE FROM events e USING target
  WHERE e.community = $1 AND e.id = target.id AND e.pubkey = $2 AND e.kind <> ${KIND_DELETION}
  RETURNING e.seq, e.id, e.kind, e.d_tag
), ${UNTAG_REMOVED}, ${CANCEL_REMOVED_STEP}, unversioned AS (
  DELETE FROM versions v USING removed
  WHERE v.community = $1 AND v.pubkey = $2 AND v.kind = removed.kind AND v.d = removed.d_tag AND v.event_id = removed.id
), remembered AS (
  INSERT INTO deleted_ids (community, event_id, pubkey, deleted_at) SELECT $1, id, $2, $4 FROM target
  ON CONFLICT DO NOTHING
)
SELECT id FROM removed`

// NIP-09: an `a` deletion covers the versions up to the deletion's created_at, not later ones
const DELETE_BY_ADDRESS = `
WITH address AS (SELECT * FROM unnest($3::int[], $4::text[]) AS a (kind, d)),
removed AS (
  DELETE FROM events e USING address a
  WHERE e.community = $1 AND e.pubkey = $2 AND e.kind = a.kind AND e.d_tag = a.d AND e.created_at <= $5
  RETURNING e.seq, e.id
), ${UNTAG_REMOVED}, unversioned AS (
  DELETE FROM versions v USING address a
  WHERE v.community = $1 AND v.pubkey = $2 AND v.kind = a.kind AND v.d = a.d AND v.created_at <= $5
), remembered AS (
  INSERT INTO deleted_addresses (community, kind, pubkey, d, until_created_at) SELECT $1, kind, $2, d, $5 FROM address
  ON CONFLICT (community, kind, pubkey, d)
  DO UPDATE SET until_created_at = GREATEST(deleted_addresses.until_created_at, excluded.until_created_at)
)
SELECT id FROM removed`

// EventStore.deleteEvents: outright, any author and kind, without a tombstone (a ban is remembered by the
// CommunityStore), with their tag rows; a removed winner takes its `versions` row with it.
const DELETE_EVENTS = `
WITH removed AS (
  DELETE FROM events WHERE community = $1 AND id = ANY($2::text[])
  RETURNING seq, id, pubkey, kind, d_tag
), ${UNTAG_REMOVED}, ${CANCEL_REMOVED_STEP}, unversioned AS (
  DELETE FROM versions v USING removed
  WHERE v.community = $1 AND v.pubkey = removed.pubkey AND v.kind = removed.kind AND v.d = removed.d_tag
    AND v.event_id = removed.id
)
SELECT id FROM removed`

const LOCK_KEYS = 'SELECT count(pg_advisory_xact_lock(k)) FROM unnest($1::int8[]) AS k'

/** Exported for the query-plan test: every write statement must find its rows through an index. */
export const SAVE_SQL = {
  SAVE_EVENT,
  SAVE_AND_ENQUEUE,
  SAVE_AND_MOVE,
  LOCK_JOB,
  SAVE_REGULAR,
  DELETE_LOSERS,
  DELETE_BY_ID,
  DELETE_BY_ADDRESS,
  DELETE_EVENTS,
} as const

/** The `d` key of a replaceable/addressable event ('' for replaceable kinds), null for regular ones. */
function addressKeyOf(event: VerifiedEvent): string | null {
  const cls = kindClass(event.kind)
  if (cls === 'addressable') return toIndexText(dTagOf(event))
  return cls === 'replaceable' ? '' : null
}

/**
 * The batch cut into plans, each with the places in the batch of the events it decides. A kind 5 keeps its own
 * statements and its place in the order (it must block a later event of the batch and not an earlier one), so a
 * run of regular events ends there, and before an id the run already holds (the repeat must see the first as
 * stored, which only a later statement can). So does an event that writes the jobs table: a report or close is
 * decided against its job's row as the events before it left it. A replaceable or addressable event keeps its
 * own statements too but leaves the run open: no regular event's outcome depends on one (different kinds, so
 * never the same id; the latest-wins rule and `a` tombstones concern addresses only), so they may be decided in
 * either order. On the ingest corpus (10 % of events replaceable or addressable) ending runs there cut them to
 * ~10 events.
 */
function planBatch(batch: readonly SaveRequest[]): { plans: Plan[]; places: number[][] } {
  const plans: Plan[] = []
  const places: number[][] = []
  let run: SaveRequest[] = []
  let runPlaces: number[] = []
  const inRun = new Set<string>()
  const endRun = () => {
    if (run.length > 0) {
      plans.push(planRegularRun(run))
      places.push(runPlaces)
    }
    run = []
    runPlaces = []
    inRun.clear()
  }
  for (const [i, request] of batch.entries()) {
    const { community, event: e } = request
    const alone = e.kind === KIND_DELETION || request.job !== undefined || request.raw.includes(RAW_SEPARATOR)
    if (alone || addressKeyOf(e) !== null) {
      if (alone) endRun()
      const job = request.job
      plans.push(
        job === undefined || job.op === 'enqueue' ? planSave(request) : planJudgedSave(request, job, (move) => planSave(request, move)),
      )
      places.push([i])
      continue
    }
    const key = idLockKey(community, e.id)
    if (inRun.has(key)) endRun()
    run.push(request)
    runPlaces.push(i)
    inRun.add(key)
  }
  endRun()
  return { plans, places }
}

/** `move`: a report's or close's job moves to `state` if the event is stored (postgres-job-writes.ts) */
function planSave({ community, event: e, raw, job }: SaveRequest, move?: { job: string; state: JobState }): PipelinedPlan {
  const d = addressKeyOf(e)
  const names: string[] = []
  const values: string[] = []
  forEachIndexedTag(e, (name, value) => {
    names.push(name)
    values.push(toIndexText(value))
  })
  const expiresAt = expirationOf(e) ?? null
  // NIP-09: deleting a deletion has no effect, so no tombstone ever blocks a kind 5
  const blockable = e.kind !== KIND_DELETION
  const params = [community, e.id, e.pubkey, e.kind, e.created_at, d, expiresAt, raw, names, values, blockable]
  const statements: Statement[] = [
    job?.op === 'enqueue'
      ? { sql: SAVE_AND_ENQUEUE, params: [...params, job.capability, job.queuedAtMs, job.deadlineAtMs] }
      : move === undefined
        ? { sql: SAVE_EVENT, params }
        : { sql: SAVE_AND_MOVE, params: [...params, move.job, move.state] },
  ]
  const lockKeys = [idLockKey(community, e.id)]
  if (d !== null) {
    statements.push({ sql: DELETE_LOSERS, params: [community, e.pubkey, e.kind, d, e.id] })
    lockKeys.push(addressLockKey(community, e.kind, e.pubkey, d))
  }
  if (e.kind === KIND_DELETION) planDeletion({ community, event: e, raw }, statements, lockKeys)
  return {
    statements,
    lockKeys,
    outcomes: (results) => [outcomeOf(results, d)],
  }
}

/** A SAVE_EVENT and its follow-up statements' results read as the event's outcome. */
function outcomeOf(results: Row[][], d: string | null): SaveOutcome {
  const first = results[0]![0]!
  if (first.seq !== null) {
    return { status: 'saved', removedIds: results.slice(1).flatMap((rows) => rows.map((r) => r.id as string)) }
  }
  if (first.duplicate) return { status: 'duplicate' }
  if (first.blocked) return { status: 'deleted' }
  // a regular event not inserted although no row was seen: another writer inserted the id since (only
  // possible for a writer that skips the id lock); ON CONFLICT DO NOTHING made it a duplicate
  return d === null ? { status: 'duplicate' } : { status: 'superseded' }
}

const addressLockKey = (community: string, kind: number, pubkey: string, d: string) => `a\0${community}\0${kind}\0${pubkey}\0${d}`

/**
 * A deletion's statements run whether or not the kind 5 itself turns out a duplicate: applying a stored
 * deletion again changes nothing (its targets are gone and tombstoned), and a duplicate reports no removals.
 */
function planDeletion({ community, event }: SaveRequest, statements: Statement[], lockKeys: string[]): void {
  const targets = deletionTargets(event)
  const ids = [...new Set(targets.ids)]
  if (ids.length > 0) {
    statements.push({ sql: DELETE_BY_ID, params: [community, event.pubkey, ids, event.created_at] })
    for (const id of ids) lockKeys.push(idLockKey(community, id))
  }
  const addresses = new Map<string, { kind: number; d: string }>()
  for (const a of targets.addresses) {
    const cls = kindClass(a.kind)
    if (cls !== 'replaceable' && cls !== 'addressable') continue
    const d = toIndexText(a.d)
    // one row per address: ON CONFLICT DO UPDATE may not touch a row twice in one statement
    addresses.set(addressLockKey(community, a.kind, event.pubkey, d), { kind: a.kind, d })
  }
  if (addresses.size === 0) return
  const list = [...addresses.values()]
  statements.push({
    sql: DELETE_BY_ADDRESS,
    params: [community, event.pubkey, list.map((a) => a.kind), list.map((a) => a.d), event.created_at],
  })
  lockKeys.push(...addresses.keys())
}

/** 64-bit advisory lock keys, deduplicated and sorted: every transaction locks in the same order. */
function toLockIds(keys: readonly string[]): string[] {
  const ids = new Set(keys.map((k) => createHash('sha256').update(k).digest().readBigInt64BE(0)))
  return [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).map(String)
}

// deadlock_detected, serialization_failure: the transaction was rolled back whole and may simply run again
const RETRYABLE = new Set(['40P01', '40001'])
const MAX_ATTEMPTS = 3

/**
 * One transaction for the whole batch; resolves after COMMIT with one outcome per request, in order.
 *
 * BEGIN, the locks, the statements and COMMIT leave together on one reserved connection: one write and one
 * round trip per batch, where the driver's `begin` waits for BEGIN before the body and for the body before
 * COMMIT (three). A failed statement aborts the transaction: the statements after it fail with 25P02 and COMMIT
 * answers ROLLBACK, so the batch rejects with the first real error (and a deadlock runs again, as before).
 */
export function commitBatch(sql: Sql, batch: readonly SaveRequest[], fence?: SessionFence): Promise<SaveOutcome[]> {
  const { plans, places } = planBatch(batch)
  const lockIds = toLockIds(plans.flatMap((p) => p.lockKeys))
  const claim: Statement[] = fence ? [{ sql: CLAIM_SESSION, params: claimParams(fence) }] : []
  return retrying(() => pipelinedTransaction(sql, plans, lockIds, claim))
    .then((outcomes) => {
      // the plans' outcomes, back in the batch's order
      const inOrder = new Array<SaveOutcome>(batch.length)
      let k = 0
      for (const at of places) for (const i of at) inOrder[i] = outcomes[k++]!
      return inOrder
    })
    .catch((error: unknown) => {
      throw fence ? asFenced(error, fence) : error
    })
}

/**
 * `claim`: a mesh session's fence, checked after the locks and before any write (postgres-session-fence.ts). A
 * stepped plan (a job's report) waits for its answers, and what follows it in the batch is sent after it; one that
 * fails ends the transaction with ROLLBACK, as it may have sent only part of its decision.
 */
async function pipelinedTransaction(
  sql: Sql,
  plans: readonly Plan[],
  lockIds: readonly string[],
  claim: readonly Statement[],
): Promise<SaveOutcome[]> {
  const tx = await sql.reserve()
  try {
    const run = (s: Statement): Promise<Row[]> => tx.unsafe(s.sql, s.params as never[], { prepare: true }).then((r) => r)
    // settled together at the end; marked handled now, as a stepped plan awaits in between (a plan's own
    // statements are handled by its Promise.all, or by its decide)
    const sent = <T>(p: Promise<T>): Promise<T> => {
      p.catch(() => {})
      return p
    }
    // the driver's queries are lazy: `then` sends them, so each is sent here, in this order, in one write
    const body: Promise<unknown>[] = [sent(tx.unsafe('BEGIN').then(() => undefined))]
    /** each plan's outcomes, read once the transaction committed */
    const decided: Promise<() => SaveOutcome[]>[] = []
    let abandoned = false
    try {
      body.push(sent(run({ sql: LOCK_KEYS, params: [lockIds as string[]] })), ...claim.map((c) => sent(run(c))))
      for (const p of plans) {
        if ('statements' in p) {
          decided.push(sent(Promise.all(p.statements.map(run)).then((rows) => () => p.outcomes(rows))))
          continue
        }
        const outcomes = sent(p.decide(run))
        decided.push(sent(outcomes.then((o) => () => o)))
        try {
          await outcomes
        } catch {
          abandoned = true
          break
        }
      }
    } catch (error) {
      // a statement that could not even be sent: the connection must not go back to the pool mid-transaction
      await Promise.allSettled([...body, ...decided, tx.unsafe('ROLLBACK')])
      throw error
    }
    const end = tx.unsafe(abandoned ? 'ROLLBACK' : 'COMMIT').then((r) => (r as unknown as { command: string }).command)
    const settled = await Promise.allSettled([...body, ...decided, end])
    const failed = settled.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => r.reason as { code?: string })
    // the first error that is not "transaction aborted" is the cause; the rest followed from it
    if (failed.length > 0) throw failed.find((e) => e?.code !== IN_FAILED_TRANSACTION) ?? failed[0]
    const done = settled.at(-1) as PromiseFulfilledResult<string>
    if (done.value !== 'COMMIT') throw new Error(`event store: COMMIT answered ${done.value}`)
    return (settled.slice(body.length, -1) as PromiseFulfilledResult<() => SaveOutcome[]>[]).flatMap((r) => r.value())
  } finally {
    tx.release()
  }
}

// in_failed_transaction: a statement after the one that aborted the transaction
const IN_FAILED_TRANSACTION = '25P02'

/**
 * EventStore.deleteEvents: the ids among `ids` that were stored, in the order given. Takes the same id locks
 * as a save, so a save of one of these ids committing on another node at this moment is either removed here
 * or arrives after (and is the caller's to refuse), never left behind by a delete that could not see it.
 */
export async function deleteEvents(sql: Sql, community: string, ids: readonly string[], fence?: SessionFence): Promise<string[]> {
  const unique = [...new Set(ids)]
  if (unique.length === 0) return []
  const lockIds = toLockIds(unique.map((id) => idLockKey(community, id)))
  const rows = await retrying(() =>
    sql.begin(async (tx) => {
      await tx.unsafe(LOCK_KEYS, [lockIds])
      // a mesh session's deletion (9005, 9008 on the channel's owner) is fenced like its other writes
      if (fence) await tx.unsafe(CLAIM_SESSION, claimParams(fence) as never[], { prepare: true })
      return tx.unsafe(DELETE_EVENTS, [community, unique], { prepare: true })
    }),
  ).catch((error: unknown) => {
    throw fence ? asFenced(error, fence) : error
  })
  const removed = new Set(rows.map((r) => r.id as string))
  return unique.filter((id) => removed.has(id))
}

/** Runs a whole transaction again when PostgreSQL rolled it back for a deadlock or a serialization failure. */
async function retrying<T>(transaction: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await transaction()
    } catch (err) {
      const code = (err as { code?: string }).code
      if (attempt >= MAX_ATTEMPTS || code === undefined || !RETRYABLE.has(code)) throw err
    }
  }
}
