#!/usr/bin/env node
// `apiary <command>`: the package's bin (bin/apiary.js runs this compiled). Each command's module is loaded
// only when that command runs, so `apiary keygen` and `apiary --help` don't pay for loading the relay.
// Exit codes: 0 done; 1 the command failed (its reason on stderr); 2 a usage error.

export const USAGE = `usage:
  apiary start [--port N] [--host ADDR] [--data-dir DIR] [--config FILE]
  apiary keygen
  apiary community add <id> --host <host[:port]> [--host ...] [--name NAME] [--data-dir DIR] [--config FILE]
  apiary community list [--data-dir DIR] [--config FILE]
  apiary config print [--config FILE]
  apiary admin <method> [args...] --url <http(s)://host[:port]/> [--key <secret hex>]   (apiary admin --help)
  apiary channel <command> [args...] --url <ws(s)://host[:port]> [--key <secret hex>]   (apiary channel --help)
  apiary agent attest <agent pubkey> [--conditions C] --key <owner secret hex>        (apiary agent --help)
  apiary mesh status --url <http(s)://host[:port]/> [--key <secret hex>] [--json]     (apiary mesh --help)
  apiary console login --url <http(s)://host[:port]> [--key <secret hex>] [--data-dir DIR]   (apiary console --help)
  apiary --help
`

type Env = Record<string, string | undefined>

const COMMANDS: Record<string, (argv: string[], env: Env) => Promise<number>> = {
  start: async (argv, env) => (await import('./start.js')).runStart(argv, env),
  keygen: async (argv) => (await import('./keygen.js')).runKeygen(argv),
  community: async (argv, env) => (await import('./community.js')).runCommunity(argv, env),
  config: async (argv, env) => (await import('./config-print.js')).runConfig(argv, env),
  admin: async (argv, env) => (await import('./admin.js')).runAdmin(argv, env),
  channel: async (argv, env) => (await import('./channel.js')).runChannel(argv, env),
  agent: async (argv, env) => (await import('./agent.js')).runAgent(argv, env),
  mesh: async (argv, env) => (await import('./mesh.js')).runMesh(argv, env),
  console: async (argv, env) => (await import('./console.js')).runConsole(argv, env),
}

export async function main(argv: string[], env: Env): Promise<number> {
  const [command, ...rest] = argv
  if (command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(USAGE)
    return 0
  }
  const run = command === undefined ? undefined : COMMANDS[command]
  if (run === undefined) {
    process.stderr.write(`${command === undefined ? 'apiary: missing command' : `apiary: unknown command ${command}`}\n${USAGE}`)
    return 2
  }
  return run(rest, env)
}

// `start` ends the process itself (after a graceful close); the others return and let it end.
main(process.argv.slice(2), process.env).then(
  (code) => {
    process.exitCode = code
  },
  (error: unknown) => {
    process.stderr.write(`apiary: ${error instanceof Error ? error.message : String(error)}\n`)
    process.exitCode = 1
  },
)
