import Database from 'better-sqlite3'
import {
  type CommunityInput,
  type CommunityRecord,
  type CommunityStore,
  DEFAULT_SETTINGS,
  type ListedEntry,
  settingsPatch,
  toBanRecord,
  toKindRules,
  toSettings,
} from '../community-store.js'
import type { Durability } from '../event-store.js'
// Extension needed: plain JS shared with the writer thread, which runs without a TypeScript loader.
import { applyCommitPragmas } from './sqlite-write-core.mjs'

/** Communities on SQLite: one row each, hosts unique across communities (a host picks exactly one tenant). */
export function openSqliteCommunityStore(file: string, durability: Durability = 'process'): CommunityStore {
  const db = new Database(file)
  applyCommitPragmas(db, durability)
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
    -- NIP-86 allowkind/disallowkind: one rule per kind, the last one given wins
    CREATE TABLE IF NOT EXISTS community_kinds (
      community TEXT NOT NULL,
      kind INTEGER NOT NULL,
      rule TEXT NOT NULL CHECK (rule IN ('allow', 'disallow')),
      PRIMARY KEY (community, kind)
    ) WITHOUT ROWID;
    -- NIP-86 allowpubkey, banevent, blockip: a key and why, per community
    CREATE TABLE IF NOT EXISTS allowed_pubkeys (
      community TEXT NOT NULL,
      pubkey TEXT NOT NULL,
      reason TEXT NOT NULL,
      PRIMARY KEY (community, pubkey)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS banned_events (
      community TEXT NOT NULL,
      event_id TEXT NOT NULL,
      reason TEXT NOT NULL,
      PRIMARY KEY (community, event_id)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS blocked_ips (
      community TEXT NOT NULL,
      ip TEXT NOT NULL,
      reason TEXT NOT NULL,
      PRIMARY KEY (community, ip)
    ) WITHOUT ROWID;
  `)
  // added after the first release: databases created before it get the column here
  const columns = db.prepare('SELECT name FROM pragma_table_info(?)').pluck().all('communities') as string[]
  if (!columns.includes('archived_at')) db.exec('ALTER TABLE communities ADD COLUMN archived_at INTEGER')
  if (!columns.includes('admins')) db.exec("ALTER TABLE communities ADD COLUMN admins TEXT NOT NULL DEFAULT '[]'")
  // a JSON object; '{}' (rows from before settings) reads as the defaults, see toSettings
  if (!columns.includes('settings')) db.exec("ALTER TABLE communities ADD COLUMN settings TEXT NOT NULL DEFAULT '{}'")
  const selectAll = db.prepare('SELECT id, name, agents, admins, settings FROM communities WHERE archived_at IS NULL ORDER BY id')
  const selectKinds = db.prepare('SELECT community, kind, rule FROM community_kinds')
  const archive = db.prepare('UPDATE communities SET archived_at = ? WHERE id = ? AND archived_at IS NULL')
  const selectHosts = db.prepare('SELECT host, community FROM community_hosts ORDER BY host')
  const exists = db.prepare('SELECT 1 FROM communities WHERE id = ?')
  const hostOwner = db.prepare('SELECT community FROM community_hosts WHERE host = ?')
  // settings: a new id gets the defaults under the given ones; an existing id keeps what is stored under them
  const upsert = db.prepare(
    `INSERT INTO communities (id, name, agents, admins, settings) VALUES (:id, :name, :agents, :admins, json_patch(:defaults, :patch))
     ON CONFLICT(id) DO UPDATE SET name = excluded.name, agents = excluded.agents, admins = excluded.admins,
       settings = json_patch(json_patch(:defaults, communities.settings), :patch)`,
  )
  const updateSettings = db.prepare(
    'UPDATE communities SET settings = json_patch(settings, ?), name = coalesce(?, name) WHERE id = ? AND archived_at IS NULL',
  )
  const setKindRule = db.prepare(
    'INSERT INTO community_kinds (community, kind, rule) VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET rule = excluded.rule',
  )
  const allowed = prepareList(db, 'allowed_pubkeys', 'pubkey')
  const allowedAmong = db
    .prepare('SELECT pubkey FROM allowed_pubkeys WHERE community = ? AND pubkey IN (SELECT value FROM json_each(?))')
    .pluck()
  const bannedEvents = prepareList(db, 'banned_events', 'event_id')
  const blockedIps = prepareList(db, 'blocked_ips', 'ip')
  const dropHosts = db.prepare('DELETE FROM community_hosts WHERE community = ?')
  const addHost = db.prepare('INSERT INTO community_hosts (host, community) VALUES (?, ?)')
  const ban = db.prepare(
    `INSERT INTO bans (community, pubkey, reason, until_seconds) VALUES (?, ?, ?, ?)
     ON CONFLICT DO UPDATE SET reason = excluded.reason, until_seconds = excluded.until_seconds`,
  )
  const inForce = '(until_seconds IS NULL OR until_seconds > ?)'
  const banOf = db.prepare(`SELECT reason FROM bans WHERE community = ? AND pubkey = ? AND ${inForce}`)
  const unban = db.prepare('DELETE FROM bans WHERE community = ? AND pubkey = ?')
  const bansOf = db.prepare(`SELECT pubkey, reason, until_seconds FROM bans WHERE community = ? AND ${inForce} ORDER BY pubkey`)

  // BEGIN IMMEDIATE: takes the write lock before its reads, so it waits (busy_timeout) for the event store's
  // writer thread instead of failing with SQLITE_BUSY when its read transaction would become a write one
  const put = db.transaction((r: CommunityInput, create: boolean): { ok: true } | { ok: false; error: string } => {
    if (create && exists.get(r.id)) return { ok: false, error: `community ${r.id} already exists` }
    for (const h of r.hosts) {
      const owner = hostOwner.get(h) as { community: string } | undefined
      if (owner && owner.community !== r.id) return { ok: false, error: `host ${h} is bound to community ${owner.community}` }
    }
    upsert.run({
      id: r.id,
      name: r.name,
      agents: JSON.stringify(r.agents),
      admins: JSON.stringify(r.admins ?? []),
      defaults: JSON.stringify(DEFAULT_SETTINGS),
      patch: JSON.stringify(settingsPatch(r.settings ?? {})),
    })
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
      const kinds = toKindRules(selectKinds.all() as { community: string; kind: number; rule: string }[])
      const rows = selectAll.all() as { id: string; name: string; agents: string; admins: string; settings: string }[]
      return rows.map((row) => ({
        id: row.id,
        name: row.name,
        hosts: hosts.get(row.id) ?? [],
        agents: JSON.parse(row.agents) as CommunityRecord['agents'],
        admins: JSON.parse(row.admins) as string[],
        settings: toSettings(JSON.parse(row.settings)),
        kinds: kinds.get(row.id) ?? { allowed: [], disallowed: [] },
      }))
    },
    async put(record, opts) {
      return put.immediate(record, opts?.create === true)
    },
    async archive(id, nowSeconds) {
      return archive.run(nowSeconds, id).changes > 0
    },
    async banPubkey(community, pubkey, reason, untilSeconds) {
      ban.run(community, pubkey, reason, untilSeconds ?? null)
    },
    async bannedAmong(community, pubkeys, nowSeconds) {
      // one indexed probe per pubkey: in-process, each costs microseconds, and the index path stays obvious
      const found = new Map<string, { reason: string }>()
      for (const pubkey of pubkeys) {
        const row = banOf.get(community, pubkey, nowSeconds) as { reason: string } | undefined
        if (row) found.set(pubkey, { reason: row.reason })
      }
      return found
    },
    async unbanPubkey(community, pubkey) {
      unban.run(community, pubkey)
    },
    async listBans(community, nowSeconds) {
      const rows = bansOf.all(community, nowSeconds) as { pubkey: string; reason: string; until_seconds: number | null }[]
      return rows.map((r) => toBanRecord(r.pubkey, r.reason, r.until_seconds))
    },
    async updateSettings(id, patch) {
      return updateSettings.run(JSON.stringify(settingsPatch(patch)), patch.name ?? null, id).changes > 0
    },
    async setKindRule(community, kind, rule) {
      setKindRule.run(community, kind, rule)
    },
    allowPubkey: async (community, pubkey, reason) => allowed.add(community, pubkey, reason),
    disallowPubkey: async (community, pubkey) => allowed.remove(community, pubkey),
    listAllowedPubkeys: async (community, limit) => allowed.list(community, limit),
    async allowedAmong(community, pubkeys) {
      if (pubkeys.length === 0) return new Set()
      return new Set(allowedAmong.all(community, JSON.stringify(pubkeys)) as string[])
    },
    banEvent: async (community, id, reason) => bannedEvents.add(community, id, reason),
    allowEvent: async (community, id) => bannedEvents.remove(community, id),
    listBannedEvents: async (community) => bannedEvents.list(community),
    isEventBanned: async (community, id) => bannedEvents.has(community, id),
    blockIp: async (community, ip, reason) => blockedIps.add(community, ip, reason),
    unblockIp: async (community, ip) => blockedIps.remove(community, ip),
    listBlockedIps: async (community) => blockedIps.list(community),
    async close() {
      db.close()
    },
  }
}

/** One NIP-86 list table (community, key, reason): listing again replaces the reason. */
function prepareList(db: Database.Database, table: string, key: string) {
  const add = db.prepare(
    `INSERT INTO ${table} (community, ${key}, reason) VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET reason = excluded.reason`,
  )
  const remove = db.prepare(`DELETE FROM ${table} WHERE community = ? AND ${key} = ?`)
  // LIMIT -1: every row
  const list = db.prepare(`SELECT ${key} AS value, reason FROM ${table} WHERE community = ? ORDER BY ${key} LIMIT ?`)
  const has = db.prepare(`SELECT 1 FROM ${table} WHERE community = ? AND ${key} = ?`).pluck()
  return {
    add: (community: string, value: string, reason: string): void => void add.run(community, value, reason),
    remove: (community: string, value: string): boolean => remove.run(community, value).changes > 0,
    list: (community: string, limit = -1): ListedEntry[] => list.all(community, limit) as ListedEntry[],
    has: (community: string, value: string): boolean => has.get(community, value) !== undefined,
  }
}
