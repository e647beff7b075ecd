// `apiary admin <method> ...`: NIP-86 management calls from the command line, signed with NIP-98.
// Exit codes: 0 the relay answered 200 without `error`; 1 it refused or could not be reached; 2 usage.
import { parseArgs } from 'node:util'
import { callManagement, isPubkeyHex, isSecretKeyHex, lowerHexArg, toManagementUrl } from '../client/admin-client.js'
import { isCommunityId } from '../protocols/ids.js'
import { isChannelId } from '../protocols/nip29.js'
import { isNip86Method, type Nip86Method } from '../protocols/nip86/methods.js'
import { ROLE_PATTERN } from '../protocols/role-domains.js'
import { tryParse } from './options.js'

export const ADMIN_USAGE = `usage: apiary admin <method> [args...] --url <http(s)://host[:port]/> [--key <secret hex>]
  apiary admin supportedmethods
  apiary admin banpubkey <pubkey> [reason]
  apiary admin unbanpubkey <pubkey>
  apiary admin timeoutpubkey <pubkey> <seconds> [reason]
  apiary admin listbannedpubkeys
  apiary admin allowpubkey <pubkey> [reason]
  apiary admin unallowpubkey <pubkey>
  apiary admin listallowedpubkeys
  apiary admin banevent <event id> [reason]
  apiary admin allowevent <event id>
  apiary admin listbannedevents
  apiary admin allowkind <kind> | disallowkind <kind>
  apiary admin listallowedkinds | listdisallowedkinds
  apiary admin blockip <ip> [reason]
  apiary admin unblockip <ip>
  apiary admin listblockedips
  apiary admin changerelayname <name...>
  apiary admin changerelaydescription <text...>          ("" goes back to the relay's description)
  apiary admin changerelayicon <http(s) url>              ("" for no icon)
  apiary admin setcommunitypolicy [--read P] [--write P] [--auth-required true|false] [--public-member-lists true|false]
                                  [--members-invite true|false]   (P: public|authenticated|members)
  apiary admin createinvite [seconds] [uses]              (a NIP-43 invite code; default one use for a day)
  apiary admin createcommunity <id> --host <host> [--host <host> ...] [--name NAME] [--admin <pubkey> ...]
  apiary admin archivecommunity <id>
  apiary admin listcommunities
  apiary admin setagenttier <pubkey> <standard|elevated|platform|none>
  apiary admin listagents
  apiary admin setagentrole <pubkey> <role>               ("" takes the role away; the agent needs a tier)
  apiary admin setroledomain <role> [role ...]             (who agents of <role> may address; none: remove the rule)
  apiary admin setchannelroles <channel> [role ...]        (the roles that may post there; none: open to all)
  apiary admin listroledomains
--url is the relay URL the call is signed for; its host picks the community (as for clients).
--key is the operator's secret key; APIARY_ADMIN_KEY is used when --key is absent (keeps it out of ps).
Keys and pubkeys are 64 hex characters (no npub/nsec).
`

type Flags = {
  host?: string[]
  name?: string
  admin?: string[]
  read?: string
  write?: string
  'auth-required'?: string
  'public-member-lists'?: string
  'members-invite'?: string
}
/** The method's params from its positional args and flags, or what is wrong with them. */
type ToParams = (args: string[], flags: Flags) => unknown[] | string

const TIERS = ['standard', 'elevated', 'platform', 'none']
const POLICIES = ['public', 'authenticated', 'members']

const noArgs: ToParams = (args) => (args.length === 0 ? [] : 'takes no arguments')

/** `<hex> [reason words...]` for pubkeys and event ids: the reason is the rest of the line. */
const hexWithReason =
  (what: string): ToParams =>
  ([hex, ...why]) => {
    if (!isPubkeyHex(hex)) return `needs ${what} (64 hex characters)`
    const text = why.join(' ')
    return text === '' ? [hex] : [hex, text]
  }
const oneHex =
  (what: string): ToParams =>
  (args) =>
    args.length === 1 && isPubkeyHex(args[0]) ? [args[0]] : `needs one ${what} (64 hex characters)`
/** The rest of the line as one string param; `""` is an argument, so it can clear a field. */
const text =
  (what: string): ToParams =>
  (args) =>
    args.length === 0 ? `needs ${what}` : [args.join(' ')]
const kind: ToParams = (args) => {
  const n = Number(args[0])
  return args.length === 1 && /^\d+$/.test(args[0] ?? '') && n <= 65_535 ? [n] : 'needs one kind number (0-65535)'
}

// Partial<Record<Nip86Method, ...>>: a method the relay no longer answers is a compile error here.
const METHODS: Partial<Record<Nip86Method, ToParams>> = {
  supportedmethods: noArgs,
  listbannedpubkeys: noArgs,
  listcommunities: noArgs,
  listagents: noArgs,
  listallowedpubkeys: noArgs,
  listbannedevents: noArgs,
  listallowedkinds: noArgs,
  listdisallowedkinds: noArgs,
  listblockedips: noArgs,
  banpubkey: hexWithReason('a pubkey'),
  allowpubkey: hexWithReason('a pubkey'),
  unbanpubkey: oneHex('pubkey'),
  unallowpubkey: oneHex('pubkey'),
  banevent: hexWithReason('an event id'),
  allowevent: oneHex('event id'),
  timeoutpubkey: ([pubkey, seconds, ...why]) => {
    if (!isPubkeyHex(pubkey) || seconds === undefined || !/^[1-9]\d*$/.test(seconds))
      return 'needs a pubkey (64 hex characters) and a number of seconds'
    const text = why.join(' ')
    return text === '' ? [pubkey, Number(seconds)] : [pubkey, Number(seconds), text]
  },
  changerelayname: text('a name'),
  changerelaydescription: text('the description ("" to clear it)'),
  changerelayicon: (args) => (args.length === 1 ? [args[0]] : 'needs one http(s) URL ("" for no icon)'),
  allowkind: kind,
  disallowkind: kind,
  blockip: ([ip, ...why]) => {
    if (ip === undefined || ip === '') return 'needs an IP address'
    const text = why.join(' ')
    return text === '' ? [ip] : [ip, text]
  },
  unblockip: (args) => (args.length === 1 && args[0] !== '' ? [args[0]] : 'needs one IP address'),
  setcommunitypolicy: (args, flags) => {
    if (args.length > 0) return 'takes flags only: --read, --write, --auth-required, --public-member-lists, --members-invite'
    const policy: Record<string, string | boolean> = {}
    for (const [flag, field] of [
      ['read', 'readPolicy'],
      ['write', 'writePolicy'],
    ] as const) {
      const value = flags[flag]
      if (value === undefined) continue
      if (!POLICIES.includes(value)) return `--${flag} must be one of ${POLICIES.join('|')}`
      policy[field] = value
    }
    for (const [flag, field] of [
      ['auth-required', 'authRequired'],
      ['public-member-lists', 'publicMemberLists'],
      ['members-invite', 'membersInvite'],
    ] as const) {
      const value = flags[flag]
      if (value === undefined) continue
      if (value !== 'true' && value !== 'false') return `--${flag} must be true or false`
      policy[field] = value === 'true'
    }
    return Object.keys(policy).length === 0
      ? 'needs at least one of --read, --write, --auth-required, --public-member-lists, --members-invite'
      : [policy]
  },
  createcommunity: (args, flags) => {
    const [id] = args
    if (args.length !== 1 || !id || !isCommunityId(id)) return 'needs one lowercase id ([a-z0-9-])'
    if (!flags.host?.length) return 'needs at least one --host'
    const admins = flags.admin ?? []
    const bad = admins.find((a) => !isPubkeyHex(a))
    if (bad !== undefined) return `--admin ${bad} is not a hex pubkey`
    const params: unknown[] = [id, flags.host.map((h) => h.toLowerCase())]
    // params are positional: admins need a name before them, and the id is what `community add` names it
    if (flags.name !== undefined || admins.length > 0) params.push(flags.name ?? id)
    if (admins.length > 0) params.push(admins)
    return params
  },
  createinvite: (args) => {
    if (args.length > 2 || args.some((a) => !/^[1-9]\d*$/.test(a))) return 'takes [seconds] [uses], whole numbers'
    return args.map(Number)
  },
  archivecommunity: (args) => (args.length === 1 && args[0] && isCommunityId(args[0]) ? [args[0]] : 'needs one community id'),
  listroledomains: noArgs,
  setagentrole: (args) => {
    const [pubkey, role] = args
    if (args.length !== 2 || !isPubkeyHex(pubkey) || role === undefined || (role !== '' && !ROLE_PATTERN.test(role)))
      return 'needs a pubkey (64 hex characters) and a role ([a-z0-9-], "" for none)'
    return [pubkey, role]
  },
  setroledomain: ([from, ...to]) => {
    if (from === undefined || !ROLE_PATTERN.test(from)) return 'needs a role ([a-z0-9-]) and the roles it may address'
    const bad = to.find((r) => !ROLE_PATTERN.test(r))
    return bad === undefined ? [from, to] : `${bad} is not a role ([a-z0-9-])`
  },
  setchannelroles: ([channel, ...roles]) => {
    if (!isChannelId(channel)) return 'needs a channel id and the roles that may post there'
    const bad = roles.find((r) => !ROLE_PATTERN.test(r))
    return bad === undefined ? [channel, roles] : `${bad} is not a role ([a-z0-9-])`
  },
  setagenttier: ([pubkey, tier, ...rest]) => {
    if (!isPubkeyHex(pubkey) || tier === undefined || !TIERS.includes(tier) || rest.length > 0) {
      return `needs a pubkey (64 hex characters) and one of ${TIERS.join('|')}`
    }
    return [pubkey, tier]
  },
}

export async function runAdmin(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const parsed = tryParse(() => parseAdminArgs(argv))
  if (!parsed.ok) return usage(parsed.error)
  const { values, positionals } = parsed
  const [method, ...args] = positionals
  if (values.help) {
    process.stdout.write(ADMIN_USAGE)
    return 0
  }
  if (method === undefined) return usage('missing method')
  const toParams = isNip86Method(method) ? METHODS[method] : undefined
  if (!toParams) return usage(`unknown method ${method}`)
  // lowercase hex is what NIP-86 relays compare; accept what a user pastes in upper case
  const params = toParams(args.map(lowerHexArg), { ...values, admin: values.admin?.map((a) => a.toLowerCase()) })
  if (typeof params === 'string') return usage(`${method} ${params}`)
  const url = values.url === undefined ? undefined : toManagementUrl(values.url)
  if (url === undefined) return usage('--url must be the relay http(s) URL, e.g. http://127.0.0.1:7777/')
  const key = values.key ?? env.APIARY_ADMIN_KEY
  if (key === undefined || !isSecretKeyHex(key)) return usage('--key (or APIARY_ADMIN_KEY) must be a 64-hex secret key')

  let answer: Awaited<ReturnType<typeof callManagement>>
  try {
    answer = await callManagement({ url, secretKeyHex: key, method, params })
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : ''
    process.stderr.write(`apiary admin: cannot reach ${url}${cause || `: ${String(error)}`}\n`)
    return 1
  }
  return report(answer.status, answer.body)
}

function parseAdminArgs(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      url: { type: 'string' },
      key: { type: 'string' },
      host: { type: 'string', multiple: true },
      name: { type: 'string' },
      admin: { type: 'string', multiple: true },
      read: { type: 'string' },
      write: { type: 'string' },
      'auth-required': { type: 'string' },
      'public-member-lists': { type: 'string' },
      'members-invite': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  })
}

/** NIP-86 answers `{ result }` or `{ result: null, error }`; refusals come with 401/403 and an `error`. */
function report(status: number, body: unknown): number {
  const { result, error } = typeof body === 'object' && body !== null ? (body as { result?: unknown; error?: unknown }) : {}
  if (status === 200 && typeof body === 'object' && body !== null && (error === undefined || error === null)) {
    process.stdout.write(`${JSON.stringify(result ?? null, null, 2)}\n`)
    return 0
  }
  const text = typeof error === 'string' ? error : typeof body === 'string' ? body.trim() : JSON.stringify(body)
  process.stderr.write(`apiary admin: HTTP ${status}: ${text}\n`)
  return 1
}

function usage(problem: string): number {
  process.stderr.write(`apiary admin: ${problem}\n${ADMIN_USAGE}`)
  return 2
}
