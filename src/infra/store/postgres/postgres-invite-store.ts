import { type InviteStore, joinedReason, type Redemption } from '../invite-store.js'
import { connectPostgres, migrate, withDeadline } from './postgres-schema.js'

/**
 * NIP-43 invite codes on PostgreSQL, shared by every node; same behaviour as sqlite-invite-store.ts. A
 * redemption writes the community store's `allowed_pubkeys` in the same transaction, so that store is
 * opened (and migrated) first.
 */
const INVITES_V1 = `
CREATE TABLE community_invites (
  community TEXT COLLATE "C" NOT NULL,
  code TEXT COLLATE "C" NOT NULL,
  created_by TEXT COLLATE "C" NOT NULL,
  expires_at BIGINT NOT NULL,
  uses_left INTEGER NOT NULL,
  PRIMARY KEY (community, code)
);
CREATE INDEX community_invites_by_creator ON community_invites (community, created_by, expires_at);
`

export async function openPostgresInviteStore(opts: { url: string }): Promise<InviteStore> {
  // codes are made and used by hand, a few at a time
  const sql = connectPostgres(opts.url, 2)
  try {
    await migrate(sql, 'invites', [INVITES_V1])
  } catch (err) {
    await sql.end({ timeout: 1 })
    throw err
  }

  return {
    async create(community, i, now, maxOpen) {
      return withDeadline(
        'invite create',
        sql.begin(async (tx) => {
          await tx.unsafe('DELETE FROM community_invites WHERE community = $1 AND expires_at <= $2', [community, now])
          if (maxOpen !== undefined) {
            // two mints racing may both pass: the bound is approximate by the few in flight at once
            const [row] = await tx.unsafe(
              `SELECT count(*)::int AS n FROM community_invites
               WHERE community = $1 AND created_by = $2 AND expires_at > $3 AND uses_left > 0`,
              [community, i.createdBy, now],
            )
            if ((row?.n as number) >= maxOpen) return false
          }
          await tx.unsafe(
            'INSERT INTO community_invites (community, code, created_by, expires_at, uses_left) VALUES ($1, $2, $3, $4, $5)',
            [community, i.code, i.createdBy, i.expiresAtSeconds, i.uses],
          )
          return true
        }),
      )
    },
    async redeem(community, code, pubkey, now) {
      return withDeadline(
        'invite redeem',
        sql.begin(async (tx): Promise<Redemption> => {
          const member = await tx.unsafe('SELECT 1 FROM allowed_pubkeys WHERE community = $1 AND pubkey = $2', [community, pubkey])
          if (member.length > 0) return 'member'
          // the row lock makes a second node's UPDATE wait, then see the use gone: one code use, one member
          const [taken] = await tx.unsafe(
            `UPDATE community_invites SET uses_left = uses_left - 1
             WHERE community = $1 AND code = $2 AND uses_left > 0 AND expires_at > $3 RETURNING created_by`,
            [community, code, now],
          )
          if (taken === undefined) {
            const [row] = await tx.unsafe('SELECT expires_at FROM community_invites WHERE community = $1 AND code = $2', [community, code])
            return row === undefined ? 'unknown' : (row.expires_at as number) <= now ? 'expired' : 'used'
          }
          await tx.unsafe(
            'INSERT INTO allowed_pubkeys (community, pubkey, reason) VALUES ($1, $2, $3) ON CONFLICT (community, pubkey) DO NOTHING',
            [community, pubkey, joinedReason(taken.created_by as string)],
          )
          return 'admitted'
        }),
      )
    },
    async close() {
      await sql.end({ timeout: 5 })
    },
  }
}
