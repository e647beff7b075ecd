import { compareMembers } from '../../../protocols/nip29-roles.js'
import type { ChannelMember, ChannelRecord, ChannelStore, ChannelWrites, MemberRoles } from '../channel-store.js'
import { createInviteIn, INVITES_V1, redeemInviteIn } from './postgres-channel-invites.js'
import { connectPostgres, migrate, type Sql, withDeadline } from './postgres-schema.js'
import { runFenced, SESSION_FENCE_MIGRATIONS, storedGeneration } from './postgres-session-fence.js'

/**
 * NIP-29 channels on PostgreSQL, shared by every node; same behaviour as sqlite-channel-store.ts. Every
 * decision is one statement or one transaction, so two nodes applying moderation events at once converge:
 * the primary keys decide a racing create, and putMember locks the channel row (FOR SHARE) against a
 * racing remove, so a member is never left behind in a deleted channel.
 */
const CHANNELS_V1 = `
CREATE TABLE channels (
  community TEXT COLLATE "C" NOT NULL,
  id TEXT COLLATE "C" NOT NULL,
  name TEXT NOT NULL,
  about TEXT NOT NULL,
  picture TEXT NOT NULL,
  private BOOLEAN NOT NULL,
  closed BOOLEAN NOT NULL,
  -- a deleted channel keeps its row: its id is never handed out again
  deleted BOOLEAN NOT NULL DEFAULT false,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (community, id)
);
CREATE TABLE channel_members (
  community TEXT COLLATE "C" NOT NULL,
  channel TEXT COLLATE "C" NOT NULL,
  pubkey TEXT COLLATE "C" NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('admin', 'member')),
  PRIMARY KEY (community, channel, pubkey)
);
`

// the access gate asks which channels a reader is in, once per REQ
const CHANNELS_V2 = `CREATE INDEX channel_members_by_pubkey ON channel_members (community, pubkey)`

// NIP-29 `hidden`: channels from before it stay as they were, not hidden
const CHANNELS_V3 = 'ALTER TABLE channels ADD COLUMN hidden BOOLEAN NOT NULL DEFAULT false'

// NIP-29 roles: a member's role names (9000), in place of admin-or-member; an admin keeps the role `admin`
const CHANNELS_V4 = `
ALTER TABLE channel_members ADD COLUMN roles TEXT[] NOT NULL DEFAULT '{}';
UPDATE channel_members SET roles = ARRAY['admin'] WHERE role = 'admin';
ALTER TABLE channel_members DROP COLUMN role`

// NIP-29 `restricted`, `banner`, `supported_kinds` (null: every kind). Channels from before them stay
// writable by members only, as every channel was until the flag existed.
const CHANNELS_V5 = `
ALTER TABLE channels ADD COLUMN restricted BOOLEAN NOT NULL DEFAULT true;
ALTER TABLE channels ADD COLUMN banner TEXT NOT NULL DEFAULT '';
ALTER TABLE channels ADD COLUMN supported_kinds INTEGER[]`

const COLUMNS = 'id, name, about, picture, banner, private, restricted, closed, hidden, supported_kinds, deleted, created_at'

// one statement: the creator's admin row exists exactly when this call inserted the channel
const CREATE = `
WITH created AS (
  INSERT INTO channels (community, id, name, about, picture, private, closed, created_at, hidden, banner, restricted, supported_kinds)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $10, $11, $12, $13::int[]) ON CONFLICT (community, id) DO NOTHING RETURNING id
)
INSERT INTO channel_members (community, channel, pubkey, roles) SELECT $1, id, $9::text, ARRAY['admin'] FROM created
ON CONFLICT (community, channel, pubkey) DO UPDATE SET roles = ARRAY['admin']
RETURNING 1`

// FOR SHARE waits for a racing remove and then re-reads `deleted`; no row written means 'unchanged'.
// xmax = 0 marks a freshly inserted row (an upsert's update leaves its transaction id there).
const PUT_MEMBER = `
WITH live AS (SELECT 1 FROM channels WHERE community = $1 AND id = $2 AND NOT deleted FOR SHARE)
INSERT INTO channel_members (community, channel, pubkey, roles) SELECT $1, $2, $3::text, $4::text[] FROM live
ON CONFLICT (community, channel, pubkey) DO UPDATE SET roles = excluded.roles WHERE channel_members.roles <> excluded.roles
RETURNING (xmax = 0) AS added`

// supported_kinds may be set to null (every kind): $11 says whether the patch carries it
const UPDATE = `
UPDATE channels SET name = coalesce($3, name), about = coalesce($4, about), picture = coalesce($5, picture),
  private = coalesce($6::bool, private), closed = coalesce($7::bool, closed), hidden = coalesce($8::bool, hidden),
  banner = coalesce($9, banner), restricted = coalesce($10::bool, restricted),
  supported_kinds = CASE WHEN $11::bool THEN $12::int[] ELSE supported_kinds END
WHERE community = $1 AND id = $2 AND NOT deleted RETURNING ${COLUMNS}`

type Row = Record<string, unknown>

const toRecord = (r: Row): ChannelRecord => ({
  id: r.id as string,
  name: r.name as string,
  about: r.about as string,
  picture: r.picture as string,
  banner: r.banner as string,
  private: r.private as boolean,
  restricted: r.restricted as boolean,
  closed: r.closed as boolean,
  hidden: r.hidden as boolean,
  supportedKinds: (r.supported_kinds as number[] | null) ?? null,
  deleted: r.deleted as boolean,
  createdAt: r.created_at as number,
})

type Query = (text: string, params: unknown[]) => Promise<Row[]>

const queryOn =
  (sql: Sql): Query =>
  (text, params) =>
    sql.unsafe(text, params as never[], { prepare: true }).then((rows) => rows)

/** The mutations, each run by `inTransaction` (its own transaction, or a fenced one) with `q` as its connection. */
function channelWrites(inTransaction: <T>(work: (q: Query, tx: Sql) => Promise<T>) => Promise<T>): ChannelWrites {
  return {
    create: (community, c, creator) =>
      inTransaction(async (q) => {
        const rows = await q(CREATE, [
          community,
          c.id,
          c.name,
          c.about,
          c.picture,
          c.private,
          c.closed,
          c.createdAt,
          creator,
          c.hidden,
          c.banner,
          c.restricted,
          c.supportedKinds,
        ])
        return rows.length > 0 ? 'created' : 'exists'
      }),
    update: (community, id, p) =>
      inTransaction(async (q) => {
        const params = [
          community,
          id,
          p.name ?? null,
          p.about ?? null,
          p.picture ?? null,
          p.private ?? null,
          p.closed ?? null,
          p.hidden ?? null,
          p.banner ?? null,
          p.restricted ?? null,
          p.supportedKinds !== undefined,
          p.supportedKinds ?? null,
        ]
        const [row] = await q(UPDATE, params)
        return row && toRecord(row)
      }),
    remove: (community, id) => inTransaction((_q, tx) => removeChannelIn(tx, community, id)),
    putMember: (community, channel, pubkey, roles) =>
      inTransaction(async (q) => {
        const [row] = await q(PUT_MEMBER, [community, channel, pubkey, roles])
        if (!row) return 'unchanged'
        return row.added ? 'added' : 'updated'
      }),
    removeMember: (community, channel, pubkey) =>
      inTransaction(async (q) => {
        const rows = await q('DELETE FROM channel_members WHERE community = $1 AND channel = $2 AND pubkey = $3 RETURNING 1', [
          community,
          channel,
          pubkey,
        ])
        return rows.length > 0
      }),
    createInvite: (community, channel, invite, now) => inTransaction((_q, tx) => createInviteIn(tx, community, channel, invite, now)),
    redeemInvite: (community, channel, code, pubkey, now) =>
      inTransaction((_q, tx) => redeemInviteIn(tx, community, channel, code, pubkey, now)),
  }
}

export async function openPostgresChannelStore(opts: { url: string }): Promise<ChannelStore> {
  // read on cache misses of the access gate and written by moderation events: a small pool is plenty
  const sql = connectPostgres(opts.url, 4)
  try {
    await migrate(sql, 'channels', [CHANNELS_V1, CHANNELS_V2, CHANNELS_V3, CHANNELS_V4, INVITES_V1, CHANNELS_V5])
    await migrate(sql, 'mesh', SESSION_FENCE_MIGRATIONS)
  } catch (err) {
    await sql.end({ timeout: 1 })
    throw err
  }
  const q = queryOn(sql)
  // a single statement needs no transaction of its own; removal's and the invites' several statements do
  const unfenced = channelWrites((work) => work(q, sql))
  const inTx = <T>(work: (tx: Sql) => Promise<T>): Promise<T> => sql.begin((tx) => work(tx as unknown as Sql)) as Promise<T>
  const plain: ChannelWrites = {
    ...unfenced,
    remove: (community, id) => inTx((tx) => removeChannelIn(tx, community, id)),
    createInvite: (community, channel, invite, now) => inTx((tx) => createInviteIn(tx, community, channel, invite, now)),
    redeemInvite: (community, channel, code, pubkey, now) => inTx((tx) => redeemInviteIn(tx, community, channel, code, pubkey, now)),
  }

  return {
    ...plain,
    fencedWrites: (fence) => channelWrites((work) => runFenced(sql, fence, (tx) => work(queryOn(tx), tx))),
    storedGeneration: (community, session) => storedGeneration(sql, community, session),
    async get(community, ids) {
      const out = new Map<string, ChannelRecord>()
      if (ids.length === 0) return out
      // on the access gate's path: an unreachable server must fail it, not park it (see withDeadline)
      const rows = await withDeadline(
        'channel lookup',
        q(`SELECT ${COLUMNS} FROM channels WHERE community = $1 AND id = ANY($2::text[])`, [community, ids]),
      )
      for (const r of rows) out.set(r.id as string, toRecord(r))
      return out
    },
    async list(community) {
      const rows = await q(`SELECT ${COLUMNS} FROM channels WHERE community = $1 AND NOT deleted ORDER BY id`, [community])
      return rows.map(toRecord)
    },
    async restricted(community) {
      // on every REQ of the community (the access gate): bounded like the other lookups
      const rows = await withDeadline(
        'restricted channels lookup',
        q(`SELECT ${COLUMNS} FROM channels WHERE community = $1 AND (private OR hidden OR deleted) ORDER BY id`, [community]),
      )
      return rows.map(toRecord)
    },
    async rolesOf(community, channel, pubkeys) {
      const out = new Map<string, MemberRoles>()
      if (pubkeys.length === 0) return out
      const rows = await withDeadline(
        'channel roles lookup',
        q('SELECT pubkey, roles FROM channel_members WHERE community = $1 AND channel = $2 AND pubkey = ANY($3::text[])', [
          community,
          channel,
          pubkeys,
        ]),
      )
      for (const r of rows) out.set(r.pubkey as string, r.roles as string[])
      return out
    },
    async memberChannels(community, pubkeys) {
      if (pubkeys.length === 0) return new Set()
      const rows = await withDeadline(
        'member channels lookup',
        q('SELECT DISTINCT channel FROM channel_members WHERE community = $1 AND pubkey = ANY($2::text[])', [community, pubkeys]),
      )
      return new Set(rows.map((r) => r.channel as string))
    },
    async members(community, channel) {
      const rows = await q('SELECT pubkey, roles FROM channel_members WHERE community = $1 AND channel = $2', [community, channel])
      return rows.map((r): ChannelMember => ({ pubkey: r.pubkey as string, roles: r.roles as string[] })).sort(compareMembers)
    },
    async close() {
      await sql.end({ timeout: 5 })
    },
  }
}

/**
 * Several statements in one transaction, not one: the UPDATE may wait for a racing putMember's (or invite's)
 * row lock, and only a later statement's snapshot sees what that committed, so the DELETEs drop it too.
 */
async function removeChannelIn(tx: Sql, community: string, id: string): Promise<boolean> {
  const marked = await tx.unsafe('UPDATE channels SET deleted = true WHERE community = $1 AND id = $2 AND NOT deleted RETURNING id', [
    community,
    id,
  ])
  if (marked.length === 0) return false
  await tx.unsafe('DELETE FROM channel_members WHERE community = $1 AND channel = $2', [community, id])
  await tx.unsafe('DELETE FROM channel_invites WHERE community = $1 AND channel = $2', [community, id])
  return true
}
