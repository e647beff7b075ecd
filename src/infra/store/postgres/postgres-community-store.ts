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
import { connectPostgres, migrate, type Sql, withDeadline } from './postgres-schema.js'

/** Communities on PostgreSQL, shared by every node; same behaviour as sqlite-community-store.ts. */
const COMMUNITIES_V1 = `
CREATE TABLE communities (
  id TEXT COLLATE "C" PRIMARY KEY,
  name TEXT NOT NULL,
  agents JSONB NOT NULL DEFAULT '[]'
);
-- host is the primary key: a host picks exactly one tenant, even when two nodes bind it at once
CREATE TABLE community_hosts (
  host TEXT COLLATE "C" PRIMARY KEY,
  community TEXT COLLATE "C" NOT NULL REFERENCES communities (id) ON DELETE CASCADE
);
CREATE INDEX community_hosts_by_community ON community_hosts (community);
-- until_seconds NULL: until unbanned. Expired rows stay until replaced or unbanned; reads skip them.
CREATE TABLE bans (
  community TEXT COLLATE "C" NOT NULL,
  pubkey TEXT COLLATE "C" NOT NULL,
  reason TEXT NOT NULL,
  until_seconds BIGINT,
  PRIMARY KEY (community, pubkey)
);
`

// archived communities keep rows, hosts and events; list() leaves them out
const COMMUNITIES_V2 = 'ALTER TABLE communities ADD COLUMN archived_at BIGINT'

// per-community NIP-86 admins (hex pubkeys); operators manage every community regardless
const COMMUNITIES_V3 = `ALTER TABLE communities ADD COLUMN admins JSONB NOT NULL DEFAULT '[]'`

// settings: a JSON object, '{}' (rows from before it) reads as the defaults (see toSettings). Kind rules and
// the NIP-86 lists: one row per (community, key), so a second node's write replaces instead of duplicating.
const COMMUNITIES_V4 = `
ALTER TABLE communities ADD COLUMN IF NOT EXISTS settings JSONB NOT NULL DEFAULT '{}';
CREATE TABLE IF NOT EXISTS community_kinds (
  community TEXT COLLATE "C" NOT NULL,
  kind INTEGER NOT NULL,
  rule TEXT NOT NULL CHECK (rule IN ('allow', 'disallow')),
  PRIMARY KEY (community, kind)
);
CREATE TABLE IF NOT EXISTS allowed_pubkeys (
  community TEXT COLLATE "C" NOT NULL,
  pubkey TEXT COLLATE "C" NOT NULL,
  reason TEXT NOT NULL,
  PRIMARY KEY (community, pubkey)
);
CREATE TABLE IF NOT EXISTS banned_events (
  community TEXT COLLATE "C" NOT NULL,
  event_id TEXT COLLATE "C" NOT NULL,
  reason TEXT NOT NULL,
  PRIMARY KEY (community, event_id)
);
CREATE TABLE IF NOT EXISTS blocked_ips (
  community TEXT COLLATE "C" NOT NULL,
  ip TEXT COLLATE "C" NOT NULL,
  reason TEXT NOT NULL,
  PRIMARY KEY (community, ip)
);
`

/** Thrown inside the put transaction to roll it back (a host or, on create, an id taken); a refusal, not an outage. */
class HostTaken extends Error {}

const inForce = (now: string) => `(until_seconds IS NULL OR until_seconds > ${now})`

export async function openPostgresCommunityStore(opts: { url: string }): Promise<CommunityStore> {
  // community reads are rare (startup, admin commands, cache misses): a small pool is plenty
  const sql = connectPostgres(opts.url, 4)
  try {
    await migrate(sql, 'communities', [COMMUNITIES_V1, COMMUNITIES_V2, COMMUNITIES_V3, COMMUNITIES_V4])
  } catch (err) {
    await sql.end({ timeout: 1 })
    throw err
  }

  const allowed = listTable(sql, 'allowed_pubkeys', 'pubkey')
  const bannedEvents = listTable(sql, 'banned_events', 'event_id')
  const blockedIps = listTable(sql, 'blocked_ips', 'ip')

  async function bindHosts(tx: typeof sql, record: CommunityInput): Promise<void> {
    const hosts = [...new Set(record.hosts)]
    await tx.unsafe('DELETE FROM community_hosts WHERE community = $1', [record.id])
    // ON CONFLICT waits for a concurrent binder's commit, so two nodes cannot both take one host
    const bound = await tx.unsafe(
      `INSERT INTO community_hosts (host, community) SELECT h, $2 FROM unnest($1::text[]) AS h
       ON CONFLICT (host) DO NOTHING RETURNING host`,
      [hosts, record.id],
    )
    if (bound.length === hosts.length) return
    const [taken] = await tx.unsafe(
      'SELECT host, community FROM community_hosts WHERE host = ANY($1::text[]) AND community <> $2 ORDER BY host',
      [hosts, record.id],
    )
    throw new HostTaken(`host ${taken?.host} is bound to community ${taken?.community}`)
  }

  return {
    async list() {
      const hosts = new Map<string, string[]>()
      for (const row of await sql`SELECT host, community FROM community_hosts ORDER BY host`) {
        hosts.set(row.community, [...(hosts.get(row.community) ?? []), row.host])
      }
      const kindRows = await sql`SELECT community, kind, rule FROM community_kinds`
      const kinds = toKindRules(kindRows as unknown as { community: string; kind: number; rule: string }[])
      const rows = await sql`SELECT id, name, agents::text AS agents, admins::text AS admins, settings::text AS settings
        FROM communities WHERE archived_at IS NULL ORDER BY id`
      return rows.map((row) => ({
        id: row.id as string,
        name: row.name as string,
        hosts: hosts.get(row.id) ?? [],
        agents: JSON.parse(row.agents) as CommunityRecord['agents'],
        admins: JSON.parse(row.admins) as string[],
        settings: toSettings(JSON.parse(row.settings)),
        kinds: kinds.get(row.id) ?? { allowed: [], disallowed: [] },
      }))
    },
    async archive(id, nowSeconds) {
      const rows = await sql`UPDATE communities SET archived_at = ${nowSeconds} WHERE id = ${id} AND archived_at IS NULL RETURNING id`
      return rows.length > 0
    },
    async put(record, opts) {
      // create: DO NOTHING on an existing id, then nothing returned ⇒ refused (atomic against a racing node)
      // settings: a new id gets the defaults under the given ones; an existing id keeps what is stored under them
      const onConflict = opts?.create
        ? 'DO NOTHING'
        : `DO UPDATE SET name = excluded.name, agents = excluded.agents, admins = excluded.admins,
             settings = $5::text::jsonb || communities.settings || $6::text::jsonb`
      try {
        await sql.begin(async (tx) => {
          // through text: a string bound straight to a jsonb parameter is JSON-encoded again by the driver
          const written = await tx.unsafe(
            `INSERT INTO communities (id, name, agents, admins, settings)
             VALUES ($1, $2, $3::text::jsonb, $4::text::jsonb, $5::text::jsonb || $6::text::jsonb)
             ON CONFLICT (id) ${onConflict} RETURNING id`,
            [
              record.id,
              record.name,
              JSON.stringify(record.agents),
              JSON.stringify(record.admins ?? []),
              JSON.stringify(DEFAULT_SETTINGS),
              JSON.stringify(settingsPatch(record.settings ?? {})),
            ],
          )
          if (written.length === 0) throw new HostTaken(`community ${record.id} already exists`)
          await bindHosts(tx as unknown as typeof sql, record)
        })
        return { ok: true }
      } catch (err) {
        if (err instanceof HostTaken) return { ok: false, error: err.message }
        throw err
      }
    },
    async banPubkey(community, pubkey, reason, untilSeconds) {
      await sql.unsafe(
        `INSERT INTO bans (community, pubkey, reason, until_seconds) VALUES ($1, $2, $3, $4)
         ON CONFLICT (community, pubkey) DO UPDATE SET reason = excluded.reason, until_seconds = excluded.until_seconds`,
        [community, pubkey, reason, untilSeconds ?? null],
      )
    },
    async bannedAmong(community, pubkeys, nowSeconds) {
      // on every write and AUTH: an unreachable server must fail it, not park it (see withDeadline)
      const rows = await withDeadline(
        'ban lookup',
        sql.unsafe(
          `SELECT pubkey, reason FROM bans WHERE community = $1 AND pubkey = ANY($2::text[]) AND ${inForce('$3')}`,
          [community, pubkeys as string[], nowSeconds],
          HOT_READ,
        ),
      )
      return new Map(rows.map((r) => [r.pubkey as string, { reason: r.reason as string }]))
    },
    async unbanPubkey(community, pubkey) {
      await sql.unsafe('DELETE FROM bans WHERE community = $1 AND pubkey = $2', [community, pubkey])
    },
    async listBans(community, nowSeconds) {
      const rows = await sql.unsafe(
        `SELECT pubkey, reason, until_seconds FROM bans WHERE community = $1 AND ${inForce('$2')} ORDER BY pubkey`,
        [community, nowSeconds],
      )
      return rows.map((r) => toBanRecord(r.pubkey, r.reason, r.until_seconds))
    },
    async updateSettings(id, patch) {
      // one statement: two admins changing different settings at once both keep their change
      const rows = await sql.unsafe(
        `UPDATE communities SET settings = settings || $1::text::jsonb, name = coalesce($2, name)
         WHERE id = $3 AND archived_at IS NULL RETURNING id`,
        [JSON.stringify(settingsPatch(patch)), patch.name ?? null, id],
      )
      return rows.length > 0
    },
    async setKindRule(community, kind, rule) {
      await sql.unsafe(
        `INSERT INTO community_kinds (community, kind, rule) VALUES ($1, $2, $3)
         ON CONFLICT (community, kind) DO UPDATE SET rule = excluded.rule`,
        [community, kind, rule],
      )
    },
    allowPubkey: (community, pubkey, reason) => allowed.add(community, pubkey, reason),
    disallowPubkey: (community, pubkey) => allowed.remove(community, pubkey),
    listAllowedPubkeys: (community, limit) => allowed.list(community, limit),
    async allowedAmong(community, pubkeys) {
      if (pubkeys.length === 0) return new Set()
      // on reads under a `members` policy: bounded like the ban lookup
      const rows = await withDeadline(
        'allowed pubkeys lookup',
        sql.unsafe(
          'SELECT pubkey FROM allowed_pubkeys WHERE community = $1 AND pubkey = ANY($2::text[])',
          [community, pubkeys as string[]],
          HOT_READ,
        ),
      )
      return new Set(rows.map((r) => r.pubkey as string))
    },
    banEvent: (community, id, reason) => bannedEvents.add(community, id, reason),
    allowEvent: (community, id) => bannedEvents.remove(community, id),
    listBannedEvents: (community) => bannedEvents.list(community),
    isEventBanned: (community, id) => bannedEvents.has(community, id),
    blockIp: (community, ip, reason) => blockedIps.add(community, ip, reason),
    unblockIp: (community, ip) => blockedIps.remove(community, ip),
    listBlockedIps: (community) => blockedIps.list(community),
    async close() {
      await sql.end({ timeout: 5 })
    },
  }
}

/**
 * The lookups on every write or connect (ban, banned event, blocked IP, allowed pubkeys) run as prepared
 * statements: parsed and planned once per connection instead of on each of the thousands per second. The
 * text of each is fixed, so each connection holds one statement per lookup.
 */
const HOT_READ = { prepare: true } as const

/** One NIP-86 list table (community, key, reason): listing again replaces the reason. */
function listTable(sql: Sql, table: string, key: string) {
  return {
    async add(community: string, value: string, reason: string): Promise<void> {
      await sql.unsafe(
        `INSERT INTO ${table} (community, ${key}, reason) VALUES ($1, $2, $3)
         ON CONFLICT (community, ${key}) DO UPDATE SET reason = excluded.reason`,
        [community, value, reason],
      )
    },
    async remove(community: string, value: string): Promise<boolean> {
      const rows = await sql.unsafe(`DELETE FROM ${table} WHERE community = $1 AND ${key} = $2 RETURNING 1`, [community, value])
      return rows.length > 0
    },
    async list(community: string, limit?: number): Promise<ListedEntry[]> {
      // the blocked ranges are read on every connect (matched in memory): bounded like the lookups below
      const rows = await withDeadline(
        `${table} list`,
        // LIMIT NULL: every row
        sql.unsafe(`SELECT ${key} AS value, reason FROM ${table} WHERE community = $1 ORDER BY ${key} LIMIT $2`, [
          community,
          limit ?? null,
        ]),
      )
      return rows.map((r) => ({ value: r.value as string, reason: r.reason as string }))
    },
    async has(community: string, value: string): Promise<boolean> {
      // checked on writes (banned event) and connects (blocked IP): bounded like the ban lookup
      const rows = await withDeadline(
        `${table} lookup`,
        sql.unsafe(`SELECT 1 FROM ${table} WHERE community = $1 AND ${key} = $2`, [community, value], HOT_READ),
      )
      return rows.length > 0
    },
  }
}
