// `apiary console login --url <relay>`: prints a one-time link that signs its opener in to the relay's console
// (src/client/console-login.ts). The key defaults to the relay key of the data dir, so an operator on the relay's
// machine needs nothing else. Exit codes: 0 printed; 1 no key could be loaded; 2 usage.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { isSecretKeyHex, toAdminKey } from '../client/admin-client.js'
import { consoleLoginLink, toConsoleOrigin } from '../client/console-login.js'
import { loadRelayKey } from '../infra/relay-key.js'
import { nip98WindowSeconds } from '../protocols/nip98.js'
import { configFrom, tryParse, usageError } from './options.js'

export const CONSOLE_USAGE = `usage: apiary console login --url <http(s)://host[:port]> [--key <secret hex>] [--data-dir DIR] [--config FILE]
  prints a link that signs you in to the relay's console at /console: open it within ${nip98WindowSeconds} s; it works once
--url is the address your browser reaches the relay at (its scheme, host and port: the link is signed for it)
--key is an operator's or a community admin's secret key; without it, the relay key of the data dir (relay.key
      or relaySecretKey from the config and APIARY_* environment)
`

export async function runConsole(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const parsed = tryParse(() =>
    parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        url: { type: 'string' },
        key: { type: 'string' },
        'data-dir': { type: 'string' },
        config: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }),
  )
  if (!parsed.ok) return usage(parsed.error)
  const { values, positionals } = parsed
  if (values.help) {
    process.stdout.write(CONSOLE_USAGE)
    return 0
  }
  if (positionals[0] !== 'login' || positionals.length > 1)
    return usage(positionals[0] === undefined ? 'missing command' : `unknown command ${positionals.join(' ')}`)
  const origin = values.url === undefined ? undefined : toConsoleOrigin(values.url)
  if (origin === undefined) return usage('--url must be the relay http(s) URL without a path, e.g. http://127.0.0.1:7777')
  if (values.key !== undefined && !isSecretKeyHex(values.key)) return usage('--key must be a 64-hex secret key')
  const key = values.key === undefined ? relayKeyOf(values, env) : toAdminKey(values.key)
  if (typeof key === 'string') {
    process.stderr.write(`apiary console: ${key}\n`)
    return 1
  }
  process.stdout.write(`${consoleLoginLink(origin, key, Math.floor(Date.now() / 1000))}\n`)
  process.stdout.write(`valid for ${nip98WindowSeconds} s, once\n`)
  return 0
}

/** The relay's key as `apiary start` with these flags would load it; never a new one (that would sign for no relay). */
function relayKeyOf(values: { 'data-dir'?: string; config?: string }, env: Record<string, string | undefined>) {
  const config = configFrom(values, env)
  if (config.relaySecretKey === '' && !existsSync(join(config.dataDir, 'relay.key')))
    return `no relay key in ${config.dataDir} (give --data-dir, or --key)`
  return loadRelayKey(config.dataDir, config.relaySecretKey)
}

const usage = (problem: string) => usageError('console', problem, CONSOLE_USAGE)
