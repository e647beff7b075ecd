import Database from 'better-sqlite3'
import { compareMembers, ROLE_ADMIN } from '../../../protocols/nip29-roles.js'
import type { ChannelInit, ChannelMember, ChannelRecord, ChannelStore, ChannelWrites, MemberRoles } from '../channel-store.js'
import type { Durability } from '../event-store.js'
import { FencedError, type SessionFence } from '../session-fence.js'
import { prepareInviteStatements } from './sqlite-channel-invites.js'
// Extension needed: plain JS shared with the writer thread, which runs without a TypeScript loader.
import { applyCommitPragmas } from './sqlite-write-core.mjs'

/**
 * NIP-29 channels on SQLite, in the communities' file. A deleted channel keeps its row with `deleted = 1`, so
 * its id is never handed out again; its members are dropped with it. Membership of an unknown or deleted
 * channel is never written (see putMember).
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS channels (
  community TEXT NOT NULL,
  id TEXT NOT NULL,
  name TEXT NOT NULL,
  about TEXT NOT NULL,
  picture TEXT NOT NULL,
  private INTEGER NOT NULL,
  closed INTEGER NOT NULL,
  deleted INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  hidden INTEGER NOT NULL DEFAULT 0,
  restricted INTEGER NOT NULL DEFAULT 1,
  banner TEXT NOT NULL DEFAULT '',
  supported_kinds TEXT,
  PRIMARY KEY (community, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS channel_members (
  community TEXT NOT NULL,
  channel TEXT NOT NULL,
  pubkey TEXT NOT NULL,
  -- a JSON array of role names (NIP-29 9000), '[]' for a plain member
  roles TEXT NOT NULL DEFAULT '[]',
  PRIMARY KEY (community, channel, pubkey)
) WITHOUT ROWID;
-- the access gate asks which channels a reader is in, once per REQ
CREATE INDEX IF NOT EXISTS channel_members_by_pubkey ON channel_members (community, pubkey);
-- mesh session fences (session-fence.ts): the highest generation that wrote, per session
CREATE TABLE IF NOT EXISTS mesh_sessions (
  community TEXT NOT NULL,
  session TEXT NOT NULL,
  generation INTEGER NOT NULL,
  owner TEXT NOT NULL,
  PRIMARY KEY (community, session)
) WITHOUT ROWID;
`

interface ChannelRow {
  id: string
  name: string
  about: string
  picture: string
  banner: string
  private: number
  restricted: number
  closed: number
  hidden: number
  /** a JSON array of kinds; null: every kind */
  supported_kinds: string | null
  deleted: number
  created_at: number
}

const COLUMNS = 'id, name, about, picture, banner, private, restricted, closed, hidden, supported_kinds, deleted, created_at'

const toRecord = (r: ChannelRow): ChannelRecord => ({
  id: r.id,
  name: r.name,
  about: r.about,
  picture: r.picture,
  banner: r.banner,
  private: r.private === 1,
  restricted: r.restricted === 1,
  closed: r.closed === 1,
  hidden: r.hidden === 1,
  supportedKinds: r.supported_kinds === null ? null : (JSON.parse(r.supported_kinds) as number[]),
  deleted: r.deleted === 1,
  createdAt: r.created_at,
})

interface MemberRow {
  pubkey: string
  /** JSON array */
  roles: string
}

// booleans travel as 0/1 (better-sqlite3 binds no booleans); null leaves the column as it is
const bit = (b: boolean | undefined) => (b === undefined ? null : b ? 1 : 0)
const kindsText = (kinds: readonly number[] | null | undefined) => (kinds == null ? null : JSON.stringify(kinds))

/**
 * Columns added after the first release, with what a channel of an older file reads as: not hidden, and
 * restricted, since every channel was writable by its members only until the flag existed.
 */
const ADDED_COLUMNS: readonly [string, string][] = [
  ['hidden', 'hidden INTEGER NOT NULL DEFAULT 0'],
  ['restricted', 'restricted INTEGER NOT NULL DEFAULT 1'],
  ['banner', "banner TEXT NOT NULL DEFAULT ''"],
  ['supported_kinds', 'supported_kinds TEXT'],
]

export function openSqliteChannelStore(file: string, durability: Durability = 'process'): ChannelStore {
  const db = new Database(file)
  applyCommitPragmas(db, durability)
  db.exec(SCHEMA)
  const columns = db.prepare('SELECT name FROM pragma_table_info(?)').pluck().all('channels') as string[]
  for (const [name, definition] of ADDED_COLUMNS) if (!columns.includes(name)) db.exec(`ALTER TABLE channels ADD COLUMN ${definition}`)
  migrateMemberRoles(db)
  const invites = prepareInviteStatements(db)
  const insertChannel = db.prepare(
    `INSERT INTO channels (community, id, name, about, picture, banner, private, restricted, closed, hidden, supported_kinds, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
  )
  const selectSome = db.prepare(`SELECT ${COLUMNS} FROM channels WHERE community = ? AND id IN (SELECT value FROM json_each(?))`)
  const selectLive = db.prepare(`SELECT ${COLUMNS} FROM channels WHERE community = ? AND deleted = 0 ORDER BY id`)
  const selectRestricted = db.prepare(
    `SELECT ${COLUMNS} FROM channels WHERE community = ? AND (private = 1 OR hidden = 1 OR deleted = 1) ORDER BY id`,
  )
  // supported_kinds may be set to null (every kind): a flag says whether the patch carries it
  const update = db.prepare(
    `UPDATE channels SET name = coalesce(?, name), about = coalesce(?, about), picture = coalesce(?, picture),
       banner = coalesce(?, banner), private = coalesce(?, private), restricted = coalesce(?, restricted),
       closed = coalesce(?, closed), hidden = coalesce(?, hidden),
       supported_kinds = CASE WHEN ? THEN ? ELSE supported_kinds END
     WHERE community = ? AND id = ? AND deleted = 0 RETURNING ${COLUMNS}`,
  )
  const markDeleted = db.prepare('UPDATE channels SET deleted = 1 WHERE community = ? AND id = ? AND deleted = 0')
  const dropMembers = db.prepare('DELETE FROM channel_members WHERE community = ? AND channel = ?')
  const isLive = db.prepare('SELECT 1 FROM channels WHERE community = ? AND id = ? AND deleted = 0').pluck()
  const rolesOfOne = db.prepare('SELECT roles FROM channel_members WHERE community = ? AND channel = ? AND pubkey = ?').pluck()
  const upsertMember = db.prepare(
    `INSERT INTO channel_members (community, channel, pubkey, roles) VALUES (?, ?, ?, ?)
     ON CONFLICT DO UPDATE SET roles = excluded.roles`,
  )
  const deleteMember = db.prepare('DELETE FROM channel_members WHERE community = ? AND channel = ? AND pubkey = ?')
  const selectMemberChannels = db.prepare(
    'SELECT DISTINCT channel FROM channel_members WHERE community = ? AND pubkey IN (SELECT value FROM json_each(?))',
  )
  const selectRoles = db.prepare(
    `SELECT pubkey, roles FROM channel_members
     WHERE community = ? AND channel = ? AND pubkey IN (SELECT value FROM json_each(?))`,
  )
  const selectMembers = db.prepare('SELECT pubkey, roles FROM channel_members WHERE community = ? AND channel = ?')

  // Each transaction below runs as BEGIN IMMEDIATE: it takes the write lock before its first read, so while
  // the event store's writer thread (another connection) commits it waits (busy_timeout) instead of failing
  // with SQLITE_BUSY, which WAL answers at once when a read transaction tries to become a write one.
  const create = db.transaction((community: string, c: ChannelInit, creator: string): 'created' | 'exists' => {
    const { changes } = insertChannel.run(
      community,
      c.id,
      c.name,
      c.about,
      c.picture,
      c.banner,
      bit(c.private),
      bit(c.restricted),
      bit(c.closed),
      bit(c.hidden),
      kindsText(c.supportedKinds),
      c.createdAt,
    )
    if (changes === 0) return 'exists'
    upsertMember.run(community, c.id, creator, JSON.stringify([ROLE_ADMIN]))
    return 'created'
  })
  const remove = db.transaction((community: string, id: string): boolean => {
    if (markDeleted.run(community, id).changes === 0) return false
    dropMembers.run(community, id)
    invites.dropAll(community, id)
    return true
  })
  const putMember = db.transaction((community: string, channel: string, pubkey: string, roles: MemberRoles) => {
    if (isLive.get(community, channel) === undefined) return 'unchanged'
    const before = rolesOfOne.get(community, channel, pubkey) as string | undefined
    const after = JSON.stringify(roles)
    if (before === after) return 'unchanged'
    upsertMember.run(community, channel, pubkey, after)
    return before === undefined ? 'added' : 'updated'
  })

  const claim = db.prepare(
    `INSERT INTO mesh_sessions (community, session, generation, owner) VALUES (?, ?, ?, ?)
     ON CONFLICT DO UPDATE SET generation = excluded.generation, owner = excluded.owner
     WHERE generation < excluded.generation OR (generation = excluded.generation AND owner = excluded.owner)`,
  )
  const selectGeneration = db.prepare('SELECT generation FROM mesh_sessions WHERE community = ? AND session = ?').pluck()
  // the mutation runs inside the claim's transaction (as a savepoint when it is a transaction itself)
  const fenced = db.transaction(<T>(f: SessionFence, run: () => T): T => {
    if (claim.run(f.community, f.session, f.generation, f.owner).changes === 0) throw new FencedError(f)
    return run()
  })
  const writesBy = (inTransaction: <T>(run: () => T) => T): ChannelWrites => ({
    create: async (community, channel, creator) => inTransaction(() => create(community, channel, creator)),
    update: async (community, id, p) =>
      inTransaction(() => {
        const row = update.get(
          p.name ?? null,
          p.about ?? null,
          p.picture ?? null,
          p.banner ?? null,
          bit(p.private),
          bit(p.restricted),
          bit(p.closed),
          bit(p.hidden),
          bit(p.supportedKinds !== undefined),
          kindsText(p.supportedKinds),
          community,
          id,
        )
        return row === undefined ? undefined : toRecord(row as ChannelRow)
      }),
    remove: async (community, id) => inTransaction(() => remove(community, id)),
    putMember: async (community, channel, pubkey, roles) => inTransaction(() => putMember(community, channel, pubkey, roles)),
    removeMember: async (community, channel, pubkey) => inTransaction(() => deleteMember.run(community, channel, pubkey).changes > 0),
    createInvite: async (community, channel, invite, now) => inTransaction(() => invites.create(community, channel, invite, now)),
    redeemInvite: async (community, channel, code, pubkey, now) =>
      inTransaction(() => invites.redeem(community, channel, code, pubkey, now)),
  })
  const immediate = db.transaction(<T>(run: () => T): T => run())

  return {
    ...writesBy(<T>(run: () => T) => immediate.immediate(run) as T),
    fencedWrites: (fence) => writesBy(<T>(run: () => T) => fenced.immediate(fence, run) as T),
    async storedGeneration(community, session) {
      return Number(selectGeneration.get(community, session) ?? 0)
    },
    async get(community, ids) {
      const out = new Map<string, ChannelRecord>()
      if (ids.length === 0) return out
      for (const row of selectSome.all(community, JSON.stringify(ids)) as ChannelRow[]) out.set(row.id, toRecord(row))
      return out
    },
    async list(community) {
      return (selectLive.all(community) as ChannelRow[]).map(toRecord)
    },
    async restricted(community) {
      return (selectRestricted.all(community) as ChannelRow[]).map(toRecord)
    },
    async rolesOf(community, channel, pubkeys) {
      const out = new Map<string, MemberRoles>()
      if (pubkeys.length === 0) return out
      const rows = selectRoles.all(community, channel, JSON.stringify(pubkeys)) as MemberRow[]
      for (const r of rows) out.set(r.pubkey, JSON.parse(r.roles) as string[])
      return out
    },
    async memberChannels(community, pubkeys) {
      if (pubkeys.length === 0) return new Set()
      return new Set(selectMemberChannels.pluck().all(community, JSON.stringify(pubkeys)) as string[])
    },
    async members(community, channel) {
      const rows = selectMembers.all(community, channel) as MemberRow[]
      return rows.map((r): ChannelMember => ({ pubkey: r.pubkey, roles: JSON.parse(r.roles) as string[] })).sort(compareMembers)
    },
    async close() {
      db.close()
    },
  }
}

/**
 * Files from before roles had a `role` column of 'admin' or 'member': an admin keeps the role `admin`, a member
 * none. One transaction, so a file is never left half converted.
 */
function migrateMemberRoles(db: Database.Database): void {
  const columns = db.prepare('SELECT name FROM pragma_table_info(?)').pluck().all('channel_members') as string[]
  if (!columns.includes('role')) return
  db.transaction(() => {
    if (!columns.includes('roles')) db.exec("ALTER TABLE channel_members ADD COLUMN roles TEXT NOT NULL DEFAULT '[]'")
    db.exec(`UPDATE channel_members SET roles = '["admin"]' WHERE role = 'admin'`)
    db.exec('ALTER TABLE channel_members DROP COLUMN role')
  }).immediate()
}
