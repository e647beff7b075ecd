import type Database from 'better-sqlite3'
import { MAX_INVITES_PER_CHANNEL } from '../../../protocols/nip29-invites.js'
import { type InviteCreated, type InviteInit, type InviteRedeemed, whyInviteRefused } from '../channel-store.js'

/**
 * NIP-29 invite codes on SQLite, beside the channels in the communities' file. The functions run inside the
 * channel store's transactions (BEGIN IMMEDIATE: one writer at a time across every process on the file), so a
 * use is taken by a conditional UPDATE that no other join can interleave with.
 */
export const INVITES_SCHEMA = `
CREATE TABLE IF NOT EXISTS channel_invites (
  community TEXT NOT NULL,
  channel TEXT NOT NULL,
  code TEXT NOT NULL,
  max_uses INTEGER NOT NULL,
  uses INTEGER NOT NULL DEFAULT 0,
  -- unix seconds; NULL: never expires
  expires_at INTEGER,
  created_by TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (community, channel, code)
) WITHOUT ROWID;
`

export interface InviteStatements {
  create(community: string, channel: string, invite: InviteInit, nowSeconds: number): InviteCreated
  /** one use taken and the member added; the caller runs it in a transaction */
  redeem(community: string, channel: string, code: string, pubkey: string, nowSeconds: number): InviteRedeemed
  /** the channel's codes go with it */
  dropAll(community: string, channel: string): void
}

export function prepareInviteStatements(db: Database.Database): InviteStatements {
  db.exec(INVITES_SCHEMA)
  const isLive = db.prepare('SELECT 1 FROM channels WHERE community = ? AND id = ? AND deleted = 0').pluck()
  const exists = db.prepare('SELECT 1 FROM channel_invites WHERE community = ? AND channel = ? AND code = ?').pluck()
  const count = db.prepare('SELECT count(*) FROM channel_invites WHERE community = ? AND channel = ?').pluck()
  const dropSpent = db.prepare(
    `DELETE FROM channel_invites WHERE community = ? AND channel = ?
       AND (uses >= max_uses OR (expires_at IS NOT NULL AND expires_at <= ?))`,
  )
  const insert = db.prepare(
    `INSERT INTO channel_invites (community, channel, code, max_uses, uses, expires_at, created_by, created_at)
     VALUES (?, ?, ?, ?, 0, ?, ?, ?)`,
  )
  const isMember = db.prepare('SELECT 1 FROM channel_members WHERE community = ? AND channel = ? AND pubkey = ?').pluck()
  const take = db.prepare(
    `UPDATE channel_invites SET uses = uses + 1 WHERE community = ? AND channel = ? AND code = ?
       AND uses < max_uses AND (expires_at IS NULL OR expires_at > ?)`,
  )
  const selectOne = db.prepare('SELECT expires_at FROM channel_invites WHERE community = ? AND channel = ? AND code = ?')
  const addMember = db.prepare(
    "INSERT INTO channel_members (community, channel, pubkey, roles) VALUES (?, ?, ?, '[]') ON CONFLICT DO NOTHING",
  )
  const dropAll = db.prepare('DELETE FROM channel_invites WHERE community = ? AND channel = ?')

  return {
    create(community, channel, invite, now) {
      if (isLive.get(community, channel) === undefined) return 'no-channel'
      if (exists.get(community, channel, invite.code) !== undefined) return 'exists'
      if ((count.get(community, channel) as number) >= MAX_INVITES_PER_CHANNEL) {
        dropSpent.run(community, channel, now)
        if ((count.get(community, channel) as number) >= MAX_INVITES_PER_CHANNEL) return 'full'
      }
      const { code, maxUses, expiresAt, createdBy, createdAt } = invite
      insert.run(community, channel, code, maxUses, expiresAt ?? null, createdBy, createdAt)
      return 'created'
    },
    redeem(community, channel, code, pubkey, now) {
      if (isLive.get(community, channel) === undefined) return 'unknown'
      if (isMember.get(community, channel, pubkey) !== undefined) return 'member'
      if (take.run(community, channel, code, now).changes === 0) {
        const row = selectOne.get(community, channel, code) as { expires_at: number | null } | undefined
        return whyInviteRefused(row && { expiresAt: row.expires_at }, now)
      }
      addMember.run(community, channel, pubkey)
      return 'joined'
    },
    dropAll(community, channel) {
      dropAll.run(community, channel)
    },
  }
}
