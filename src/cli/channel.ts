// `apiary channel <command> ...`: one NIP-29 event, sent over a NIP-42-authenticated WebSocket.
// Exit codes: 0 the relay answered OK true (stdout: `ok <event id>`); 1 it refused or could not be reached; 2 usage.
import { parseArgs } from 'node:util'
import { isPubkeyHex, isSecretKeyHex, lowerHexArg, toAdminKey } from '../client/admin-client.js'
import { openRelaySession, RelayClientError, type RelaySession } from '../client/channel-client.js'
import type { NostrEvent } from '../protocols/nip01/event.js'
import type { EventTemplate } from '../protocols/nip01/sign.js'
import {
  CHANNEL_ID_RULE,
  isChannelId,
  KIND_CREATE_GROUP,
  KIND_DELETE_GROUP,
  KIND_EDIT_METADATA,
  KIND_GROUP_METADATA,
  KIND_JOIN_REQUEST,
  KIND_LEAVE_REQUEST,
  KIND_PUT_USER,
  KIND_REMOVE_USER,
} from '../protocols/nip29.js'
import { tryParse } from './options.js'

export const CHANNEL_USAGE = `usage: apiary channel <command> [args...] --url <ws(s)://host[:port]> [--key <secret hex>]
  apiary channel create <id> [--name N] [--about A] [--private] [--closed] [--hidden]
  apiary channel edit <id> [--name N] [--about A] [--private|--public] [--closed|--open] [--hidden|--visible]
  apiary channel add <id> <pubkey> [--admin]
  apiary channel remove <id> <pubkey>
  apiary channel delete <id>
  apiary channel join <id>
  apiary channel leave <id>
  apiary channel list
--url is the relay's WebSocket URL; its host picks the community, and it is signed into the NIP-42 AUTH.
--key is your secret key; APIARY_ADMIN_KEY is used when --key is absent (keeps it out of ps).
Channel ids are ${CHANNEL_ID_RULE}; pubkeys are 64 hex characters (no npub/nsec).
`

type Flags = ReturnType<typeof parseChannelArgs>['values']
/** The event's kind and tags (after the `h` tag) from the command's args and flags, or what is wrong with them. */
type ToEvent = (args: string[], flags: Flags) => { kind: number; tags: string[][] } | string

const COMMANDS: Record<string, ToEvent> = {
  create: (args, flags) => (args.length === 0 ? metadata(KIND_CREATE_GROUP, flags, false) : 'takes no arguments after the id'),
  edit: (args, flags) => (args.length === 0 ? metadata(KIND_EDIT_METADATA, flags, true) : 'takes no arguments after the id'),
  add: ([pubkey, ...rest], flags) => {
    if (!isPubkeyHex(pubkey) || rest.length > 0) return 'needs one pubkey (64 hex characters)'
    return { kind: KIND_PUT_USER, tags: [flags.admin ? ['p', pubkey, 'admin'] : ['p', pubkey]] }
  },
  remove: ([pubkey, ...rest]) =>
    isPubkeyHex(pubkey) && rest.length === 0 ? { kind: KIND_REMOVE_USER, tags: [['p', pubkey]] } : 'needs one pubkey (64 hex characters)',
  delete: (args) => (args.length === 0 ? { kind: KIND_DELETE_GROUP, tags: [] } : 'takes no arguments after the id'),
  join: (args) => (args.length === 0 ? { kind: KIND_JOIN_REQUEST, tags: [] } : 'takes no arguments after the id'),
  leave: (args) => (args.length === 0 ? { kind: KIND_LEAVE_REQUEST, tags: [] } : 'takes no arguments after the id'),
}

/** 9007/9002 tags. An edit sends only what it changes: NIP-29 leaves an absent flag as it is. */
function metadata(kind: number, flags: Flags, isEdit: boolean): { kind: number; tags: string[][] } | string {
  if (flags.private && flags.public) return '--private and --public contradict each other'
  if (flags.closed && flags.open) return '--closed and --open contradict each other'
  if (flags.hidden && flags.visible) return '--hidden and --visible contradict each other'
  const tags: string[][] = []
  if (flags.name !== undefined) tags.push(['name', flags.name])
  if (flags.about !== undefined) tags.push(['about', flags.about])
  for (const flag of ['private', 'public', 'closed', 'open', 'hidden', 'visible'] as const) if (flags[flag]) tags.push([flag])
  if (isEdit && tags.length === 0)
    return 'needs at least one of --name, --about, --private, --public, --closed, --open, --hidden, --visible'
  return { kind, tags }
}

export async function runChannel(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const parsed = tryParse(() => parseChannelArgs(argv))
  if (!parsed.ok) return usage(parsed.error)
  const { values, positionals } = parsed
  if (values.help) {
    process.stdout.write(CHANNEL_USAGE)
    return 0
  }
  const [command, id, ...rest] = positionals
  if (command === undefined) return usage('missing command')
  let template: EventTemplate | undefined
  if (command === 'list') {
    if (positionals.length > 1) return usage('list takes no arguments')
  } else {
    const toEvent = COMMANDS[command]
    if (!toEvent) return usage(`unknown command ${command}`)
    if (id === undefined || !isChannelId(id)) return usage(`${command} needs a channel id (${CHANNEL_ID_RULE})`)
    // lowercase hex is what relays compare; accept what a user pastes in upper case
    const built = toEvent(rest.map(lowerHexArg), values)
    if (typeof built === 'string') return usage(`${command} ${built}`)
    template = { kind: built.kind, tags: [['h', id], ...built.tags], content: '' }
  }
  if (values.url === undefined || !isWsUrl(values.url)) return usage('--url must be the relay ws(s) URL, e.g. ws://127.0.0.1:7777')
  const key = values.key ?? env.APIARY_ADMIN_KEY
  if (key === undefined || !isSecretKeyHex(key)) return usage('--key (or APIARY_ADMIN_KEY) must be a 64-hex secret key')

  let session: RelaySession | undefined
  try {
    session = await openRelaySession({ url: values.url, key: toAdminKey(key) })
    return template ? await publish(session, template) : await list(session)
  } catch (error) {
    if (!(error instanceof RelayClientError)) throw error
    process.stderr.write(`apiary channel: ${error.message}\n`)
    return 1
  } finally {
    await session?.close()
  }
}

/** `ok <event id>` (with the relay's message when it sent one, e.g. `duplicate:`), or the refusal on stderr. */
async function publish(session: RelaySession, template: EventTemplate): Promise<number> {
  const answer = await session.publish(template)
  if (!answer.accepted) {
    process.stderr.write(`apiary channel: ${answer.message || 'refused without a reason'}\n`)
    return 1
  }
  process.stdout.write(answer.message === '' ? `ok ${answer.id}\n` : `ok ${answer.id} ${answer.message}\n`)
  return 0
}

/** One line per channel: id, name, and its flags (`public|private`, `open|closed`, then `hidden` if so), tab-separated. */
async function list(session: RelaySession): Promise<number> {
  const answer = await session.query({ kinds: [KIND_GROUP_METADATA] })
  if ('closed' in answer) {
    process.stderr.write(`apiary channel: ${answer.closed || 'the relay closed the query'}\n`)
    return 1
  }
  const byId = new Map<string, NostrEvent>()
  for (const e of answer.events) {
    const id = tagValue(e, 'd')
    const seen = id === undefined ? undefined : byId.get(id)
    if (id !== undefined && (!seen || e.created_at > seen.created_at)) byId.set(id, e)
  }
  for (const [id, e] of [...byId].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const flags = [hasFlag(e, 'private') ? 'private' : 'public', hasFlag(e, 'closed') ? 'closed' : 'open']
    if (hasFlag(e, 'hidden')) flags.push('hidden')
    process.stdout.write(`${id}\t${tagValue(e, 'name') ?? ''}\t${flags.join(' ')}\n`)
  }
  return 0
}

const tagValue = (e: NostrEvent, name: string): string | undefined => e.tags.find((t) => t[0] === name)?.[1]
const hasFlag = (e: NostrEvent, flag: string): boolean => e.tags.some((t) => t[0] === flag)

function isWsUrl(url: string): boolean {
  try {
    const { protocol } = new URL(url)
    return protocol === 'ws:' || protocol === 'wss:'
  } catch {
    return false
  }
}

function parseChannelArgs(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      url: { type: 'string' },
      key: { type: 'string' },
      name: { type: 'string' },
      about: { type: 'string' },
      private: { type: 'boolean' },
      public: { type: 'boolean' },
      closed: { type: 'boolean' },
      open: { type: 'boolean' },
      hidden: { type: 'boolean' },
      visible: { type: 'boolean' },
      admin: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  })
}

function usage(problem: string): number {
  process.stderr.write(`apiary channel: ${problem}\n${CHANNEL_USAGE}`)
  return 2
}
