// `apiary config print`: the effective config as JSON (the secret keys redacted).
import { redactUrl } from '../infra/startup.js'
import { configFrom, parseCommon, usageError } from './options.js'

const USAGE = 'usage: apiary config print [--config FILE] [--data-dir DIR] [--port N]\n'

export async function runConfig(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const parsed = parseCommon(argv)
  if (!parsed.ok) return usageError('config', parsed.error, USAGE)
  const { values, positionals } = parsed
  if (values.help) {
    process.stdout.write(USAGE)
    return 0
  }
  if (positionals.length !== 1 || positionals[0] !== 'print') return usageError('config', 'the only subcommand is print', USAGE)
  const c = configFrom(values, env)
  // secrets never leave in the output: the relay key, the communities' own keys, the passwords in the backend URLs
  const shown = {
    ...c,
    relaySecretKey: c.relaySecretKey ? '<set>' : '',
    communities: c.communities.map((community) => ({ ...community, secretKey: community.secretKey ? '<set>' : '' })),
    redisUrl: redactUrl(c.redisUrl),
    databaseUrl: redactUrl(c.databaseUrl),
  }
  process.stdout.write(`${JSON.stringify(shown, null, 2)}\n`)
  return 0
}
