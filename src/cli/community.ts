// `apiary community add|list`: communities in the store the relay reads (the SQLite file in the data
// directory, or PostgreSQL when APIARY_DATABASE_URL is set). A running relay picks a new one up at its next
// revalidation (`revalidateSeconds`), with no restart.
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from '../infra/config.js'
import { type CommunityStore, seedDefaultCommunity } from '../infra/store/community-store.js'
import { openPostgresCommunityStore } from '../infra/store/postgres/postgres-community-store.js'
import { openSqliteCommunityStore } from '../infra/store/sqlite/sqlite-community-store.js'
import { normalizeHost } from '../protocols/host.js'
import { isCommunityId } from '../protocols/ids.js'
import { maxHostsPerCommunity } from '../protocols/nip86/community-params.js'
import { configFrom, parseCommon, usageError } from './options.js'

export const COMMUNITY_USAGE = `usage: apiary community add <id> --host <host[:port]> [--host ...] [--name NAME] [--data-dir DIR] [--config FILE]
       apiary community list [--data-dir DIR] [--config FILE]
<id> is lowercase letters, digits and dashes (at most 63); a host is a hostname or IP address, optionally with
:port (e.g. team.example.com, chat.example.com:8443, [::1]:7777).
`

export async function runCommunity(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const parsed = parseCommon(argv)
  if (!parsed.ok) return usageError('community', parsed.error, COMMUNITY_USAGE)
  const { values, positionals } = parsed
  if (values.help) {
    process.stdout.write(COMMUNITY_USAGE)
    return 0
  }
  const [sub, id, ...extra] = positionals
  if (sub === 'list') {
    if (id !== undefined) return usageError('community', 'list takes no arguments', COMMUNITY_USAGE)
    return withStore(configFrom(values, env), async (store) => {
      for (const r of await store.list()) process.stdout.write(`${r.id}\t${r.hosts.join(',')}\n`)
      return 0
    })
  }
  if (sub !== 'add')
    return usageError('community', sub === undefined ? 'missing subcommand (add or list)' : `unknown subcommand ${sub}`, COMMUNITY_USAGE)
  if (id === undefined || !isCommunityId(id) || extra.length > 0)
    return usageError('community', 'add needs one id: lowercase letters, digits and dashes', COMMUNITY_USAGE)
  const hosts = toHosts(values.host ?? [])
  if (typeof hosts === 'string') return usageError('community', hosts, COMMUNITY_USAGE)
  const config = configFrom(values, env)
  return withStore(config, async (store) => {
    const r = await store.put({ id, name: values.name ?? id, hosts, agents: [] })
    if (!r.ok) {
      process.stderr.write(`apiary community: ${r.error}\n`)
      return 1
    }
    process.stdout.write(
      `community ${id} bound to ${hosts.join(', ')}; a running relay serves it within ${config.revalidateSeconds}s (revalidateSeconds), a relay started later at once\n`,
    )
    return 0
  })
}

/** The hosts as the relay will match them (lowercase, default port dropped), or what is wrong with them. */
function toHosts(given: string[]): string[] | string {
  if (given.length === 0) return 'add needs at least one --host'
  if (given.length > maxHostsPerCommunity) return `at most ${maxHostsPerCommunity} hosts per community`
  const out: string[] = []
  for (const h of given) {
    const n = normalizeHost(h, 'http')
    if (n === undefined) return `${JSON.stringify(h)} is not a host (a hostname or IP address, optionally :port)`
    out.push(n)
  }
  return [...new Set(out)]
}

async function withStore(config: Config, body: (store: CommunityStore) => Promise<number>): Promise<number> {
  const store = config.databaseUrl
    ? await openPostgresCommunityStore({ url: config.databaseUrl })
    : openSqliteCommunityStore(join(mkdirp(config.dataDir), 'apiary.sqlite'), config.store.durability)
  try {
    await seedDefaultCommunity(store)
    return await body(store)
  } finally {
    await store.close()
  }
}

function mkdirp(dir: string): string {
  mkdirSync(dir, { recursive: true })
  return dir
}
