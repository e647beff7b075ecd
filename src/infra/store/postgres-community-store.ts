import { type CommunityInput, type CommunityRecord, type CommunityStore, toBanRecord } from './community-store'
import { connectPostgres, migrate, withDeadline } from './postgres-schema'

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

/** Thrown inside the put transaction to roll it back (a host or, on create, an id taken); a refusal, not an outage. */
class HostTaken extends Error {}

const inForce = (now: string) => `(until_seconds IS NULL OR until_seconds > ${now})`

export async function openPostgresCommunityStore(opts: { url: string }): Promise<CommunityStore> {
  // community reads are rare (startup, admin commands, cache misses): a small pool is plenty
  const sql = connectPostgres(opts.url, 4)
  try {
    await migrate(sql, 'communities', [COMMUNITIES_V1, COMMUNITIES_V2, COMMUNITIES_V3])
  } catch (err) {
    await sql.end({ timeout: 1 })
    throw err
  }

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
      const rows = await sql`SELECT id, name, agents::text AS agents, admins::text AS admins FROM communities WHERE archived_at IS NULL ORDER BY id`
      return rows.map((row) => ({
        id: row.id as string,
        name: row.name as string,
        hosts: hosts.get(row.id) ?? [],
        agents: JSON.parse(row.agents) as CommunityRecord['agents'],
        admins: JSON.parse(row.admins) as string[],
      }))
    },
    async archive(id, nowSeconds) {
      const rows = await sql`UPDATE communities SET archived_at = ${nowSeconds} WHERE id = ${id} AND archived_at IS NULL RETURNING id`
      return rows.length > 0
    },
    async put(record, opts) {
      // create: DO NOTHING on an existing id, then nothing returned ⇒ refused (atomic against a racing node)
      const onConflict = opts?.create
        ? 'DO NOTHING'
        : 'DO UPDATE SET name = excluded.name, agents = excluded.agents, admins = excluded.admins'
      try {
        await sql.begin(async (tx) => {
          // through text: a string bound straight to a jsonb parameter is JSON-encoded again by the driver
          const written = await tx.unsafe(
            `INSERT INTO communities (id, name, agents, admins) VALUES ($1, $2, $3::text::jsonb, $4::text::jsonb)
             ON CONFLICT (id) ${onConflict} RETURNING id`,
            [record.id, record.name, JSON.stringify(record.agents), JSON.stringify(record.admins ?? [])],
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
    async isBanned(community, pubkey, nowSeconds) {
      // on every write and AUTH: an unreachable server must fail it, not park it (see withDeadline)
      const [row] = await withDeadline(
        'ban lookup',
        sql.unsafe(`SELECT reason FROM bans WHERE community = $1 AND pubkey = $2 AND ${inForce('$3')}`, [community, pubkey, nowSeconds]),
      )
      return row && { reason: row.reason as string }
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
    async close() {
      await sql.end({ timeout: 5 })
    },
  }
}
