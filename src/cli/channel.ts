// `apiary channel <command> ...`: one NIP-29 event, sent over a NIP-42-authenticated WebSocket.
// Exit codes: 0 the relay answered OK true (stdout: `ok <event id>`); 1 it refused or could not be reached; 2 usage.
import { parseArgs } from 'node:util'
import { isPubkeyHex, isSecretKeyHex, lowerHexArg, toAdminKey } from '../client/admin-client.js'
import { openRelaySession, RelayClientError, type RelaySession } from '../client/channel-client.js'
import type { NostrEvent } from '../protocols/nip01/event.js'
import type { EventTemplate } from '../protocols/nip01/sign.js'
import {
  CHANNEL_FLAGS,
  CHANNEL_ID_RULE,
  type ChannelFlag,
  isChannelId,
  KIND_CREATE_GROUP,
  KIND_CREATE_INVITE,
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
  apiary channel create <id> [--name N] [--about A] [--private] [--restricted] [--closed] [--hidden]
  apiary channel edit <id> [--name N] [--about A] [--private|--public] [--restricted|--unrestricted]
                           [--closed|--open] [--hidden|--visible]
  apiary channel add <id> <pubkey> [--admin] [--role R]...   (again: replaces the member's roles)
  apiary channel remove <id> <pubkey>
  apiary channel delete <id>
  apiary channel invite <id> <code> [--uses N] [--expires-at UNIX_SECONDS]
  apiary channel join <id> [--code C]
  apiary channel leave <id>
  apiary channel list
--url is the relay's WebSocket URL; its host picks the community, and it is signed into the NIP-42 AUTH.
--key is your secret key; APIARY_ADMIN_KEY is used when --key is absent (keeps it out of ps).
A flag left out of create is off. edit reads the channel's flags (its 39000) and sends them all, with yours changed.
Channel ids are ${CHANNEL_ID_RULE}; pubkeys are 64 hex characters (no npub/nsec).
`

type Flags = ReturnType<typeof parseChannelArgs>['values']
/** An event's kind and tags (after the `h` tag); `flags`: those an edit changes, the others read from the channel. */
type Built = { kind: number; tags: string[][]; flags?: Partial<Record<ChannelFlag, boolean>> }
/** The event from the command's args and flags, or what is wrong with them. */
type ToEvent = (args: string[], flags: Flags) => Built | string

const COMMANDS: Record<string, ToEvent> = {
  create: (args, flags) => (args.length === 0 ? metadata(KIND_CREATE_GROUP, flags, false) : 'takes no arguments after the id'),
  edit: (args, flags) => (args.length === 0 ? metadata(KIND_EDIT_METADATA, flags, true) : 'takes no arguments after the id'),
  add: ([pubkey, ...rest], flags) => {
    if (!isPubkeyHex(pubkey) || rest.length > 0) return 'needs one pubkey (64 hex characters)'
    const roles = [...(flags.admin ? ['admin'] : []), ...(flags.role ?? [])]
    return { kind: KIND_PUT_USER, tags: [['p', pubkey, ...roles]] }
  },
  invite: ([code, ...rest], flags) => {
    if (code === undefined || rest.length > 0) return 'needs one invite code'
    const tags = [['code', code]]
    if (flags.uses !== undefined) tags.push(['uses', flags.uses])
    if (flags['expires-at'] !== undefined) tags.push(['expiration', flags['expires-at']])
    return { kind: KIND_CREATE_INVITE, tags }
  },
  remove: ([pubkey, ...rest]) =>
    isPubkeyHex(pubkey) && rest.length === 0 ? { kind: KIND_REMOVE_USER, tags: [['p', pubkey]] } : 'needs one pubkey (64 hex characters)',
  delete: (args) => (args.length === 0 ? { kind: KIND_DELETE_GROUP, tags: [] } : 'takes no arguments after the id'),
  join: (args, flags) =>
    args.length === 0
      ? { kind: KIND_JOIN_REQUEST, tags: flags.code === undefined ? [] : [['code', flags.code]] }
      : 'takes no arguments after the id',
  leave: (args) => (args.length === 0 ? { kind: KIND_LEAVE_REQUEST, tags: [] } : 'takes no arguments after the id'),
}

/** Each flag's option that turns it off (the one that turns it on is named after it). */
const OFF: Record<ChannelFlag, 'public' | 'unrestricted' | 'visible' | 'open'> = {
  private: 'public',
  restricted: 'unrestricted',
  hidden: 'visible',
  closed: 'open',
}

/** The flags the options set, on or off; or what contradicts. */
function flagChanges(flags: Flags): Partial<Record<ChannelFlag, boolean>> | string {
  const out: Partial<Record<ChannelFlag, boolean>> = {}
  for (const f of CHANNEL_FLAGS) {
    if (flags[f] && flags[OFF[f]]) return `--${f} and --${OFF[f]} contradict each other`
    if (flags[f] || flags[OFF[f]]) out[f] = flags[f] === true
  }
  return out
}

/**
 * 9007/9002 tags. A 9007 states every flag (one left out is off). A 9002 carrying any flag replaces them
 * all, so an edit that changes flags carries every flag: runChannel adds them from the channel's 39000.
 */
function metadata(kind: number, flags: Flags, isEdit: boolean): Built | string {
  const changes = flagChanges(flags)
  if (typeof changes === 'string') return changes
  const tags: string[][] = []
  if (flags.name !== undefined) tags.push(['name', flags.name])
  if (flags.about !== undefined) tags.push(['about', flags.about])
  if (!isEdit) {
    for (const f of CHANNEL_FLAGS) if (changes[f]) tags.push([f])
    return { kind, tags }
  }
  if (tags.length === 0 && Object.keys(changes).length === 0)
    return `needs at least one of --name, --about, ${CHANNEL_FLAGS.map((f) => `--${f}, --${OFF[f]}`).join(', ')}`
  return Object.keys(changes).length === 0 ? { kind, tags } : { kind, tags, flags: changes }
}

/**
 * The flag tags of an edit that changes `changes`: every flag, the channel's own (from its newest 39000) where
 * the edit leaves it, and its `supported_kinds`, which a 9002 carrying flags would otherwise clear.
 */
async function fullFlagTags(
  session: RelaySession,
  id: string,
  changes: Partial<Record<ChannelFlag, boolean>>,
): Promise<string[][] | string> {
  const answer = await session.query({ kinds: [KIND_GROUP_METADATA], '#d': [id] })
  if ('closed' in answer) return answer.closed || 'the relay closed the query'
  const current = newestById(answer.events).get(id)
  if (!current) return `cannot read channel ${id}'s flags (no such channel, or hidden from this key)`
  const tags = CHANNEL_FLAGS.map((f) => [(changes[f] ?? hasFlag(current, f)) ? f : OFF[f]])
  const kinds = current.tags.find((t) => t[0] === 'supported_kinds')
  return kinds ? [...tags, kinds] : tags
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
  let flagsToRead: Partial<Record<ChannelFlag, boolean>> | undefined
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
    flagsToRead = built.flags
  }
  if (values.url === undefined || !isWsUrl(values.url)) return usage('--url must be the relay ws(s) URL, e.g. ws://127.0.0.1:7777')
  const key = values.key ?? env.APIARY_ADMIN_KEY
  if (key === undefined || !isSecretKeyHex(key)) return usage('--key (or APIARY_ADMIN_KEY) must be a 64-hex secret key')

  let session: RelaySession | undefined
  try {
    session = await openRelaySession({ url: values.url, key: toAdminKey(key) })
    if (template && flagsToRead && id !== undefined) {
      const flagTags = await fullFlagTags(session, id, flagsToRead)
      if (typeof flagTags === 'string') {
        process.stderr.write(`apiary channel: ${flagTags}\n`)
        return 1
      }
      template.tags?.push(...flagTags)
    }
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

/**
 * One line per channel: id, name, and its flags (`public|private`, `open|closed`, then `restricted` and
 * `hidden` if so), tab-separated.
 */
async function list(session: RelaySession): Promise<number> {
  const answer = await session.query({ kinds: [KIND_GROUP_METADATA] })
  if ('closed' in answer) {
    process.stderr.write(`apiary channel: ${answer.closed || 'the relay closed the query'}\n`)
    return 1
  }
  for (const [id, e] of [...newestById(answer.events)].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const flags = [hasFlag(e, 'private') ? 'private' : 'public', hasFlag(e, 'closed') ? 'closed' : 'open']
    for (const f of ['restricted', 'hidden'] as const) if (hasFlag(e, f)) flags.push(f)
    process.stdout.write(`${id}\t${tagValue(e, 'name') ?? ''}\t${flags.join(' ')}\n`)
  }
  return 0
}

/** The newest 39000 of each channel among `events`, by channel id. */
function newestById(events: NostrEvent[]): Map<string, NostrEvent> {
  const byId = new Map<string, NostrEvent>()
  for (const e of events) {
    const id = tagValue(e, 'd')
    const seen = id === undefined ? undefined : byId.get(id)
    if (id !== undefined && (!seen || e.created_at > seen.created_at)) byId.set(id, e)
  }
  return byId
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
      restricted: { type: 'boolean' },
      unrestricted: { type: 'boolean' },
      hidden: { type: 'boolean' },
      visible: { type: 'boolean' },
      admin: { type: 'boolean' },
      role: { type: 'string', multiple: true },
      uses: { type: 'string' },
      'expires-at': { type: 'string' },
      code: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  })
}

function usage(problem: string): number {
  process.stderr.write(`apiary channel: ${problem}\n${CHANNEL_USAGE}`)
  return 2
}
