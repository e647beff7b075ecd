// `apiary mesh status --url <relay>`: one node's view of the relay mesh, from its `GET /mesh/status`.
// Operator scripts parse both outputs, so the table's columns and the JSON are a contract (protocols/mesh/status.ts).
// Exit codes: 0 printed; 1 the mesh is off, the relay could not be reached or answered something else; 2 usage.
import { parseArgs } from 'node:util'
import { isSecretKeyHex, operatorGetAuthorization, toManagementUrl } from '../client/admin-client.js'
import { MESH_STATUS_DISABLED, type MeshStatus, parseMeshStatus } from '../protocols/mesh/status.js'
import { reason } from '../protocols/reasons.js'
import { tryParse, usageError } from './options.js'

export const MESH_USAGE = `usage: apiary mesh status --url <http(s)://host[:port]/> [--key <secret hex>] [--json]
  prints the node's runtime id, its peers (phi, link state) and the sessions it knows with their owners
--url is the node's http(s) URL (any host name: the status is the node's, not a community's)
--key is an operator's secret key (the relay key or one of operatorPubkeys'); APIARY_ADMIN_KEY when absent
--json prints the relay's JSON document as it came, instead of the table
`

// a status is one small in-memory read on the node: a relay silent this long is stuck, not busy
const FETCH_TIMEOUT_MS = 10_000
/** how much of a runtime id the table shows: 64 bits tell a mesh's nodes apart and leave the line readable */
const SHORT_ID_CHARS = 16

export async function runMesh(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const parsed = tryParse(() => parseMeshArgs(argv))
  if (!parsed.ok) return usage(parsed.error)
  const { values, positionals } = parsed
  if (values.help) {
    process.stdout.write(MESH_USAGE)
    return 0
  }
  const [command, ...rest] = positionals
  if (command !== 'status') return usage(command === undefined ? 'missing command' : `unknown command ${command}`)
  if (rest.length > 0) return usage('status takes no arguments')
  const url = values.url === undefined ? undefined : toManagementUrl(values.url)
  if (url === undefined) return usage('--url must be the relay http(s) URL, e.g. http://127.0.0.1:7777/')
  const key = values.key ?? env.APIARY_ADMIN_KEY
  if (key === undefined || !isSecretKeyHex(key)) return usage('--key (or APIARY_ADMIN_KEY) must be a 64-hex secret key')

  let answer: { status: number; text: string }
  try {
    const target = new URL('/mesh/status', url)
    const headers = { Authorization: operatorGetAuthorization(key, target.href) }
    const res = await fetch(target, { headers, signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) })
    answer = { status: res.status, text: await res.text() }
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : String(error)
    return fail(`cannot reach ${url}: ${cause}`)
  }
  const json = parseJson(answer.text)
  if (answer.status === 404 && isMeshOff(json)) return fail(`mesh is off at ${url}`)
  if (answer.status !== 200) return fail(`HTTP ${answer.status}: ${answer.text.trim().slice(0, 200)}`)
  if (json === NOT_JSON) return fail(reason('invalid', 'the answer is not JSON'))
  const status = parseMeshStatus(json)
  if (!status.ok) return fail(status.error)
  process.stdout.write(values.json ? withNewline(answer.text) : toTable(status.value))
  return 0
}

/** The table: a header line, then `peers:` and `sessions:` each followed by one indented line per entry. */
export function toTable(status: MeshStatus): string {
  const lines = [`runtime ${status.runtime} draining ${status.draining ? 'yes' : 'no'}`, 'peers:']
  for (const p of status.peers) {
    const link = p.connected ? 'connected' : 'disconnected'
    lines.push(`  ${short(p.runtime)}  ${p.endpoint}  phi ${p.phi.toFixed(2)}  ${link}${p.suspect ? '  suspect' : ''}`)
  }
  lines.push('sessions:')
  for (const s of status.sessions) {
    lines.push(`  ${s.community}/${s.session}  ${s.kind}  gen ${s.generation}  owner ${short(s.owner)}  ${s.local ? 'local' : 'remote'}`)
  }
  return `${lines.join('\n')}\n`
}

function parseMeshArgs(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      url: { type: 'string' },
      key: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  })
}

const short = (runtime: string) => runtime.slice(0, SHORT_ID_CHARS)
const withNewline = (text: string) => (text.endsWith('\n') ? text : `${text}\n`)

const NOT_JSON = Symbol('not JSON')
function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return NOT_JSON
  }
}

/** Only the relay's own "mesh is off" answer: a 404 from anything else (a proxy, an older relay) is not that. */
function isMeshOff(json: unknown): boolean {
  return typeof json === 'object' && json !== null && (json as { error?: unknown }).error === MESH_STATUS_DISABLED.error
}

function fail(problem: string): number {
  process.stderr.write(`apiary mesh: ${problem}\n`)
  return 1
}

const usage = (problem: string) => usageError('mesh', problem, MESH_USAGE)
