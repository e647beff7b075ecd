// `apiary start | keygen | community add | config print | admin | channel | agent` — the same config path as createRelay.
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { schnorr } from '@noble/curves/secp256k1.js'
import { bytesToHex } from '@noble/hashes/utils.js'
import { runAdmin } from './cli-admin'
import { runAgent } from './cli-agent'
import { runChannel } from './cli-channel'
import { type ConfigInput, loadConfig } from './infra/config'
import { COMMUNITY_ID_PATTERN, seedDefaultCommunity } from './infra/store/community-store'
import { openSqliteCommunityStore } from './infra/store/sqlite-community-store'
import { createRelay } from './relay'

const USAGE = `usage:
  apiary start [--port N] [--host ADDR] [--data-dir DIR] [--config FILE]
  apiary keygen
  apiary community add <name> --host <host> [--host <host> ...] [--data-dir DIR] [--config FILE]
  apiary community list [--data-dir DIR] [--config FILE]
  apiary config print [--config FILE]
  apiary admin <method> [args...] --url <http(s)://host[:port]/> [--key <secret hex>]   (apiary admin --help)
  apiary channel <command> [args...] --url <ws(s)://host[:port]> [--key <secret hex>]   (apiary channel --help)
  apiary agent attest <agent pubkey> [--conditions C] --key <owner secret hex>        (apiary agent --help)
`

function configFrom(values: { port?: string; host?: string; 'data-dir'?: string; config?: string }) {
  const overrides: ConfigInput = {}
  if (values.port !== undefined) overrides.port = Number(values.port)
  if (values.host !== undefined) overrides.host = values.host
  if (values['data-dir'] !== undefined) overrides.dataDir = values['data-dir']
  return loadConfig({ env: process.env, file: values.config, overrides })
}

async function main(argv: string[]): Promise<number> {
  // admin, channel and agent have their own flags (--url, --key, --admin ...), parsed in their cli-*.ts
  if (argv[0] === 'admin') return runAdmin(argv.slice(1), process.env)
  if (argv[0] === 'channel') return runChannel(argv.slice(1), process.env)
  if (argv[0] === 'agent') return runAgent(argv.slice(1), process.env)
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      port: { type: 'string' },
      host: { type: 'string', multiple: true },
      'data-dir': { type: 'string' },
      config: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  })
  const [cmd, sub, arg] = positionals
  const common = { port: values.port, 'data-dir': values['data-dir'], config: values.config }
  if (values.help || !cmd) {
    process.stdout.write(USAGE)
    return cmd ? 0 : 2
  }
  if (cmd === 'start') return start(configFrom({ ...common, host: values.host?.[0] }))
  if (cmd === 'keygen') {
    const sk = schnorr.utils.randomSecretKey()
    process.stdout.write(`secret ${bytesToHex(sk)}\npubkey ${bytesToHex(schnorr.getPublicKey(sk))}\n`)
    return 0
  }
  if (cmd === 'config' && sub === 'print') {
    const c = configFrom(common)
    process.stdout.write(`${JSON.stringify({ ...c, relaySecretKey: c.relaySecretKey ? '<set>' : '' }, null, 2)}\n`)
    return 0
  }
  if (cmd === 'community' && (sub === 'add' || sub === 'list')) {
    const c = configFrom(common)
    mkdirSync(c.dataDir, { recursive: true })
    const store = openSqliteCommunityStore(join(c.dataDir, 'apiary.sqlite'))
    try {
      await seedDefaultCommunity(store)
      if (sub === 'list') {
        for (const r of await store.list()) process.stdout.write(`${r.id}\t${r.hosts.join(',')}\n`)
        return 0
      }
      if (!arg || !COMMUNITY_ID_PATTERN.test(arg) || !values.host?.length) {
        process.stderr.write(`community add needs a lowercase name ([a-z0-9-]) and at least one --host\n${USAGE}`)
        return 2
      }
      const r = await store.put({ id: arg, name: arg, hosts: values.host.map((h) => h.toLowerCase()), agents: [] })
      if (!r.ok) {
        process.stderr.write(`${r.error}\n`)
        return 1
      }
      process.stdout.write(`community ${arg} bound to ${values.host.join(', ')} (restart the relay to serve it)\n`)
      return 0
    } finally {
      await store.close()
    }
  }
  process.stderr.write(USAGE)
  return 2
}

async function start(config: ReturnType<typeof loadConfig>): Promise<number> {
  const relay = createRelay(config)
  await relay.listen()
  process.stdout.write(`apiary relay listening on ${relay.url} (data in ${config.dataDir})\n`)
  await new Promise<void>((resolve) => {
    const stop = () => resolve()
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
  })
  await relay.close()
  return 0
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code
  },
  (error: unknown) => {
    process.stderr.write(`apiary: ${error instanceof Error ? error.message : String(error)}\n`)
    process.exitCode = 1
  },
)
