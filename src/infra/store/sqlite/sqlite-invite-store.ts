import Database from 'better-sqlite3'
import type { Durability } from '../event-store.js'
import { type InviteStore, joinedReason, type NewInvite, type Redemption } from '../invite-store.js'
// Extension needed: plain JS shared with the writer thread, which runs without a TypeScript loader.
import { applyCommitPragmas } from './sqlite-write-core.mjs'

/**
 * NIP-43 invite codes on SQLite, in the communities' file: a redemption writes the community store's
 * `allowed_pubkeys` in the same transaction, so that file's community store is opened first (it creates
 * the table).
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS community_invites (
  community TEXT NOT NULL,
  code TEXT NOT NULL,
  created_by TEXT NOT NULL,
  expires_at INTEGER NOT NULL,
  uses_left INTEGER NOT NULL,
  PRIMARY KEY (community, code)
) WITHOUT ROWID;
-- a creator's open codes are counted at each 28935 (the per-creator bound)
CREATE INDEX IF NOT EXISTS community_invites_by_creator ON community_invites (community, created_by, expires_at);
`

export function openSqliteInviteStore(file: string, durability: Durability = 'process'): InviteStore {
  const db = new Database(file)
  applyCommitPragmas(db, durability)
  db.exec(SCHEMA)
  const dropExpired = db.prepare('DELETE FROM community_invites WHERE community = ? AND expires_at <= ?')
  const openOf = db
    .prepare('SELECT count(*) FROM community_invites WHERE community = ? AND created_by = ? AND expires_at > ? AND uses_left > 0')
    .pluck()
  const insert = db.prepare('INSERT INTO community_invites (community, code, created_by, expires_at, uses_left) VALUES (?, ?, ?, ?, ?)')
  const isAllowed = db.prepare('SELECT 1 FROM allowed_pubkeys WHERE community = ? AND pubkey = ?').pluck()
  const takeUse = db.prepare(
    `UPDATE community_invites SET uses_left = uses_left - 1
     WHERE community = ? AND code = ? AND uses_left > 0 AND expires_at > ? RETURNING created_by`,
  )
  const inviteOf = db.prepare('SELECT expires_at, uses_left FROM community_invites WHERE community = ? AND code = ?')
  const allow = db.prepare('INSERT INTO allowed_pubkeys (community, pubkey, reason) VALUES (?, ?, ?) ON CONFLICT DO NOTHING')

  const create = db.transaction((community: string, i: NewInvite, now: number, maxOpen: number | undefined): boolean => {
    dropExpired.run(community, now)
    if (maxOpen !== undefined && (openOf.get(community, i.createdBy, now) as number) >= maxOpen) return false
    insert.run(community, i.code, i.createdBy, i.expiresAtSeconds, i.uses)
    return true
  })
  const redeem = db.transaction((community: string, code: string, pubkey: string, now: number): Redemption => {
    if (isAllowed.get(community, pubkey) !== undefined) return 'member'
    const taken = takeUse.get(community, code, now) as { created_by: string } | undefined
    if (taken === undefined) {
      const row = inviteOf.get(community, code) as { expires_at: number; uses_left: number } | undefined
      return row === undefined ? 'unknown' : row.expires_at <= now ? 'expired' : 'used'
    }
    allow.run(community, pubkey, joinedReason(taken.created_by))
    return 'admitted'
  })

  return {
    // IMMEDIATE: the write lock before the reads (see sqlite-community-store.ts put)
    create: async (community, invite, now, maxOpen) => create.immediate(community, invite, now, maxOpen),
    redeem: async (community, code, pubkey, now) => redeem.immediate(community, code, pubkey, now),
    async close() {
      db.close()
    },
  }
}
