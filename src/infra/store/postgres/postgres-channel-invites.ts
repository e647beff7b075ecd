import { MAX_INVITES_PER_CHANNEL } from '../../../protocols/nip29-invites.js'
import { type InviteCreated, type InviteInit, type InviteRedeemed, whyInviteRefused } from '../channel-store.js'
import type { Sql } from './postgres-schema.js'

/**
 * NIP-29 invite codes on PostgreSQL; same behaviour as sqlite-channel-invites.ts. Each call is one transaction
 * that first locks the channel row FOR SHARE (a racing remove waits, then the code is gone with the channel).
 * A use is taken by a conditional UPDATE: of two joins racing for a code's last use, on any nodes, the second
 * waits for the first's row lock, re-reads `uses`, and matches nothing.
 */
export const INVITES_V1 = `
CREATE TABLE channel_invites (
  community TEXT COLLATE "C" NOT NULL,
  channel TEXT COLLATE "C" NOT NULL,
  code TEXT COLLATE "C" NOT NULL,
  max_uses INTEGER NOT NULL,
  uses INTEGER NOT NULL DEFAULT 0,
  -- unix seconds; NULL: never expires
  expires_at BIGINT,
  created_by TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (community, channel, code)
)`

const LIVE = 'SELECT 1 FROM channels WHERE community = $1 AND id = $2 AND NOT deleted FOR SHARE'

export async function createInviteIn(tx: Sql, community: string, channel: string, invite: InviteInit, now: number): Promise<InviteCreated> {
  if ((await tx.unsafe(LIVE, [community, channel])).length === 0) return 'no-channel'
  const same = await tx.unsafe('SELECT 1 FROM channel_invites WHERE community = $1 AND channel = $2 AND code = $3', [
    community,
    channel,
    invite.code,
  ])
  if (same.length > 0) return 'exists'
  const [{ n } = { n: 0 }] = await tx.unsafe('SELECT count(*)::int AS n FROM channel_invites WHERE community = $1 AND channel = $2', [
    community,
    channel,
  ])
  if ((n as number) >= MAX_INVITES_PER_CHANNEL) {
    const dropped = await tx.unsafe(
      `DELETE FROM channel_invites WHERE community = $1 AND channel = $2
         AND (uses >= max_uses OR (expires_at IS NOT NULL AND expires_at <= $3)) RETURNING 1`,
      [community, channel, now],
    )
    if ((n as number) - dropped.length >= MAX_INVITES_PER_CHANNEL) return 'full'
  }
  const { code, maxUses, expiresAt, createdBy, createdAt } = invite
  const inserted = await tx.unsafe(
    `INSERT INTO channel_invites (community, channel, code, max_uses, uses, expires_at, created_by, created_at)
     VALUES ($1, $2, $3, $4, 0, $5, $6, $7) ON CONFLICT (community, channel, code) DO NOTHING RETURNING 1`,
    [community, channel, code, maxUses, expiresAt ?? null, createdBy, createdAt],
  )
  // a racing create of the same code on another node committed first
  return inserted.length > 0 ? 'created' : 'exists'
}

export async function redeemInviteIn(
  tx: Sql,
  community: string,
  channel: string,
  code: string,
  pubkey: string,
  now: number,
): Promise<InviteRedeemed> {
  if ((await tx.unsafe(LIVE, [community, channel])).length === 0) return 'unknown'
  const member = await tx.unsafe('SELECT 1 FROM channel_members WHERE community = $1 AND channel = $2 AND pubkey = $3', [
    community,
    channel,
    pubkey,
  ])
  if (member.length > 0) return 'member'
  const taken = await tx.unsafe(
    `UPDATE channel_invites SET uses = uses + 1 WHERE community = $1 AND channel = $2 AND code = $3
       AND uses < max_uses AND (expires_at IS NULL OR expires_at > $4) RETURNING 1`,
    [community, channel, code, now],
  )
  if (taken.length === 0) {
    const [row] = await tx.unsafe('SELECT expires_at FROM channel_invites WHERE community = $1 AND channel = $2 AND code = $3', [
      community,
      channel,
      code,
    ])
    return whyInviteRefused(row && { expiresAt: row.expires_at === null ? null : Number(row.expires_at) }, now)
  }
  await tx.unsafe(
    `INSERT INTO channel_members (community, channel, pubkey, roles) VALUES ($1, $2, $3, '{}')
     ON CONFLICT (community, channel, pubkey) DO NOTHING`,
    [community, channel, pubkey],
  )
  return 'joined'
}
