// `apiary agent attest <agent pubkey> [--conditions C] --key <owner secret hex>`: the NIP-OA `auth` tag by which
// an owner vouches for an agent key (docs/agent-attestation.md). Offline: nothing is sent anywhere.
// Exit codes: 0 the tag is printed as JSON; 2 usage (a bad key, pubkey or conditions string).
import { parseArgs } from 'node:util'
import { isPubkeyHex, isSecretKeyHex, toAdminKey } from '../client/admin-client.js'
import { parseConditions, signOwnerAttestation } from '../protocols/nip-oa.js'
import { tryParse } from './options.js'

export const AGENT_USAGE = `usage: apiary agent attest <agent pubkey> [--conditions C] --key <owner secret hex>
  prints the NIP-OA tag ["auth", <owner pubkey>, <conditions>, <sig>] as JSON, for the agent to put in its AUTH event
--conditions clauses joined by &: kind=<n>, created_at<<unix seconds>, created_at><unix seconds>
  e.g. --conditions 'kind=1&created_at<1767225600' (empty: any kind, never expires)
--key is the owner's secret key; APIARY_OWNER_KEY is used when --key is absent (keeps it out of ps).
`

export function runAgent(argv: string[], env: Record<string, string | undefined>): number {
  const parsed = tryParse(() => parseAgentArgs(argv))
  if (!parsed.ok) return usage(parsed.error)
  const { values, positionals } = parsed
  if (values.help) {
    process.stdout.write(AGENT_USAGE)
    return 0
  }
  const [command, agentArg, ...rest] = positionals
  if (command !== 'attest') return usage(command === undefined ? 'missing command' : `unknown command ${command}`)
  const agent = agentArg?.toLowerCase()
  if (agent === undefined || !isPubkeyHex(agent) || rest.length > 0) return usage('attest needs one agent pubkey (64 hex characters)')
  const conditions = values.conditions ?? ''
  const clauses = parseConditions(conditions)
  if (!clauses.ok) return usage(`--conditions: ${clauses.error}`)
  const key = values.key ?? env.APIARY_OWNER_KEY
  if (key === undefined || !isSecretKeyHex(key)) return usage("--key (or APIARY_OWNER_KEY) must be the owner's 64-hex secret key")
  const owner = toAdminKey(key)
  // NIP-OA: an attestation signed by the agent key itself is invalid; every relay would refuse it
  if (owner.pubkey === agent) return usage('the owner key is the agent key: an agent cannot vouch for itself')
  // NIP-OA attestations cannot be revoked; only an expiry ends one (docs/agent-attestation.md)
  if (!clauses.value.some((c) => c.type === 'created_at<')) {
    process.stderr.write('apiary agent: note: no created_at< clause, so this attestation never expires\n')
  }
  process.stdout.write(`${JSON.stringify(signOwnerAttestation(owner.secretKey, agent, conditions))}\n`)
  return 0
}

function parseAgentArgs(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      conditions: { type: 'string' },
      key: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  })
}

function usage(problem: string): number {
  process.stderr.write(`apiary agent: ${problem}\n${AGENT_USAGE}`)
  return 2
}
