// The flags `start`, `community` and `config` share, turned into the config every path loads the same way:
// defaults ← --config file ← APIARY_* env ← flags.
import { parseArgs } from 'node:util'
import type { Config, ConfigInput } from '../infra/config-types.js'
import { loadConfig } from '../infra/load-config.js'

export const COMMON_OPTIONS = {
  port: { type: 'string' },
  host: { type: 'string', multiple: true },
  name: { type: 'string' },
  'data-dir': { type: 'string' },
  config: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const

const parse = (argv: string[]) => parseArgs({ args: argv, allowPositionals: true, options: COMMON_OPTIONS })
export type CommonValues = ReturnType<typeof parse>['values']

/** what `parse` returns, or its complaint (parseArgs throws on an unknown flag, a missing value) for a usage error */
export function tryParse<T extends object>(parseFlags: () => T): ({ ok: true } & T) | { ok: false; error: string } {
  try {
    return { ok: true, ...parseFlags() }
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) }
  }
}

export const parseCommon = (argv: string[]) => tryParse(() => parse(argv))

/** `listenHost`: --host means the bind address for `start` only (for `community add` it is a hostname). */
export function configFrom(values: CommonValues, env: Record<string, string | undefined>, listenHost?: string): Config {
  const overrides: ConfigInput = {}
  if (values.port !== undefined) overrides.port = Number(values.port)
  if (listenHost !== undefined) overrides.host = listenHost
  if (values['data-dir'] !== undefined) overrides.dataDir = values['data-dir']
  return loadConfig({ env, file: values.config, overrides })
}

/** `apiary <command>: <problem>` and the usage on stderr; the exit code for a usage error. */
export function usageError(command: string, problem: string, usage: string): number {
  process.stderr.write(`apiary ${command}: ${problem}\n${usage}`)
  return 2
}
