// The session fence on PostgreSQL (see session-fence.ts for what it guarantees). Every fenced transaction begins with apiary_claim_session(community, session, generation, owner), which
// stores the generation and owner for that session when `generation >= stored` (an equal generation only for
// the same owner), and otherwise raises SQLSTATE AP001, which aborts the whole transaction: nothing the stale
// owner sent after the claim is written. The claim's upsert takes the session row's lock and keeps it to
// COMMIT, so fenced transactions of one session run one at a time; a stale owner whose transaction waits on
// the lock re-reads the row when the new owner commits (READ COMMITTED) and is refused.
//
// So even an owner that slept past its lease (SIGSTOP, a GC pause, a partition) and wakes believing it still
// owns the session cannot write once its successor has written once, whatever the lease checks said.

import { FencedError, type SessionFence } from '../session-fence.js'
import type { Sql } from './postgres-schema.js'

/** SQLSTATE of the claim's refusal (class AP is unused by PostgreSQL). */
export const FENCED_SQLSTATE = 'AP001'

export const SESSION_FENCE_MIGRATIONS: readonly string[] = [
  `
CREATE TABLE mesh_sessions (
  community TEXT COLLATE "C" NOT NULL,
  session TEXT COLLATE "C" NOT NULL,
  generation BIGINT NOT NULL,
  owner TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (community, session)
);
CREATE FUNCTION apiary_claim_session(p_community TEXT, p_session TEXT, p_generation BIGINT, p_owner TEXT) RETURNS BIGINT
LANGUAGE plpgsql AS $$
DECLARE claimed BIGINT;
BEGIN
  INSERT INTO mesh_sessions AS s (community, session, generation, owner) VALUES (p_community, p_session, p_generation, p_owner)
  ON CONFLICT (community, session) DO UPDATE SET generation = excluded.generation, owner = excluded.owner
  WHERE s.generation < excluded.generation OR (s.generation = excluded.generation AND s.owner = excluded.owner)
  RETURNING generation INTO claimed;
  IF claimed IS NULL THEN
    RAISE EXCEPTION 'mesh session %/% is fenced: generation % of % is stale', p_community, p_session, p_generation, p_owner
      USING ERRCODE = '${FENCED_SQLSTATE}';
  END IF;
  RETURN claimed;
END $$;
`,
]

/** The statement that opens every fenced transaction. */
export const CLAIM_SESSION = 'SELECT apiary_claim_session($1, $2, $3, $4)'
export const claimParams = (f: SessionFence): unknown[] => [f.community, f.session, f.generation, f.owner]

/** The highest generation that has written for a session (0: none): the floor a new ACQUIRE must pass. */
export async function storedGeneration(sql: Sql, community: string, session: string): Promise<number> {
  const rows = await sql.unsafe('SELECT generation FROM mesh_sessions WHERE community = $1 AND session = $2', [community, session])
  return rows.length === 0 ? 0 : Number(rows[0]?.generation)
}

/** Runs `work` in one transaction that first claims `fence`; rejects with FencedError when it is stale. */
export async function runFenced<T>(sql: Sql, fence: SessionFence, work: (tx: Sql) => Promise<T>): Promise<T> {
  try {
    return (await sql.begin(async (tx) => {
      await tx.unsafe(CLAIM_SESSION, claimParams(fence) as never[], { prepare: true })
      return work(tx as unknown as Sql)
    })) as T
  } catch (error) {
    throw asFenced(error, fence)
  }
}

/** A claim's refusal as FencedError; any other error unchanged. */
export function asFenced(error: unknown, fence: SessionFence): unknown {
  return (error as { code?: string } | null)?.code === FENCED_SQLSTATE ? new FencedError(fence, error) : error
}
