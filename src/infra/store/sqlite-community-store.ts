import Database from 'better-sqlite3'
import { type CommunityInput, type CommunityRecord, type CommunityStore, toBanRecord } from './community-store'

/** Communities on SQLite: one row each, hosts unique across communities (a host picks exactly one tenant). */
export function openSqliteCommunityStore(file: string): CommunityStore {
  const db = new Database(file)
  db.pragma('journal_mode = WAL')
  db.pragma('busy_timeout = 5000')
  db.exec(`
    CREATE TABLE IF NOT EXISTS communities (
      id TEXT PRIMARY KEY,
      name TEXT NOT NULL,
      agents TEXT NOT NULL DEFAULT '[]'
    );
    CREATE TABLE IF NOT EXISTS community_hosts (
      host TEXT PRIMARY KEY,
      community TEXT NOT NULL REFERENCES communities(id) ON DELETE CASCADE
    );
    -- until_seconds NULL: until unbanned. Expired rows stay until replaced or unbanned; reads skip them.
    CREATE TABLE IF NOT EXISTS bans (
      community TEXT NOT NULL,
      pubkey TEXT NOT NULL,
      reason TEXT NOT NULL,
      until_seconds INTEGER,
      PRIMARY KEY (community, pubkey)
    ) WITHOUT ROWID;
  `)
  // added after the first release: databases created before it get the column here
  const columns = db.prepare('SELECT name FROM pragma_table_info(?)').pluck().all('communities') as string[]
  if (!columns.includes('archived_at')) db.exec('ALTER TABLE communities ADD COLUMN archived_at INTEGER')
  if (!columns.includes('admins')) db.exec("ALTER TABLE communities ADD COLUMN admins TEXT NOT NULL DEFAULT '[]'")
  const selectAll = db.prepare('SELECT id, name, agents, admins FROM communities WHERE archived_at IS NULL ORDER BY id')
  const archive = db.prepare('UPDATE communities SET archived_at = ? WHERE id = ? AND archived_at IS NULL')
  const selectHosts = db.prepare('SELECT host, community FROM community_hosts ORDER BY host')
  const exists = db.prepare('SELECT 1 FROM communities WHERE id = ?')
  const hostOwner = db.prepare('SELECT community FROM community_hosts WHERE host = ?')
  const upsert = db.prepare(
    `INSERT INTO communities (id, name, agents, admins) VALUES (?, ?, ?, ?)
     ON CONFLICT(id) DO UPDATE SET name = excluded.name, agents = excluded.agents, admins = excluded.admins`,
  )
  const dropHosts = db.prepare('DELETE FROM community_hosts WHERE community = ?')
  const addHost = db.prepare('INSERT INTO community_hosts (host, community) VALUES (?, ?)')
  const ban = db.prepare(
    `INSERT INTO bans (community, pubkey, reason, until_seconds) VALUES (?, ?, ?, ?)
     ON CONFLICT DO UPDATE SET reason = excluded.reason, until_seconds = excluded.until_seconds`,
  )
  const inForce = '(until_seconds IS NULL OR until_seconds > ?)'
  const banOf = db.prepare(`SELECT reason FROM bans WHERE community = ? AND pubkey = ? AND ${inForce}`)
  const unban = db.prepare('DELETE FROM bans WHERE community = ? AND pubkey = ?')
  const bansOf = db.prepare(
    `SELECT pubkey, reason, until_seconds FROM bans WHERE community = ? AND ${inForce} ORDER BY pubkey`,
  )

  const put = db.transaction((r: CommunityInput, create: boolean): { ok: true } | { ok: false; error: string } => {
    if (create && exists.get(r.id)) return { ok: false, error: `community ${r.id} already exists` }
    for (const h of r.hosts) {
      const owner = hostOwner.get(h) as { community: string } | undefined
      if (owner && owner.community !== r.id) return { ok: false, error: `host ${h} is bound to community ${owner.community}` }
    }
    upsert.run(r.id, r.name, JSON.stringify(r.agents), JSON.stringify(r.admins ?? []))
    dropHosts.run(r.id)
    for (const h of r.hosts) addHost.run(h, r.id)
    return { ok: true }
  })

  return {
    async list() {
      const hosts = new Map<string, string[]>()
      for (const row of selectHosts.all() as { host: string; community: string }[]) {
        hosts.set(row.community, [...(hosts.get(row.community) ?? []), row.host])
      }
      return (selectAll.all() as { id: string; name: string; agents: string; admins: string }[]).map((row) => ({
        id: row.id,
        name: row.name,
        hosts: hosts.get(row.id) ?? [],
        agents: JSON.parse(row.agents) as CommunityRecord['agents'],
        admins: JSON.parse(row.admins) as string[],
      }))
    },
    async put(record, opts) {
      return put(record, opts?.create === true)
    },
    async archive(id, nowSeconds) {
      return archive.run(nowSeconds, id).changes > 0
    },
    async banPubkey(community, pubkey, reason, untilSeconds) {
      ban.run(community, pubkey, reason, untilSeconds ?? null)
    },
    async isBanned(community, pubkey, nowSeconds) {
      const row = banOf.get(community, pubkey, nowSeconds) as { reason: string } | undefined
      return row && { reason: row.reason }
    },
    async unbanPubkey(community, pubkey) {
      unban.run(community, pubkey)
    },
    async listBans(community, nowSeconds) {
      const rows = bansOf.all(community, nowSeconds) as { pubkey: string; reason: string; until_seconds: number | null }[]
      return rows.map((r) => toBanRecord(r.pubkey, r.reason, r.until_seconds))
    },
    async close() {
      db.close()
    },
  }
}
