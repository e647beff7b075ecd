import { isHex64 } from '../ids.js'
import { type Reason, reason } from '../reasons.js'
import { err, ok, type Result } from '../result.js'

/** NIP-86: the body's media type, on the same URI as the relay's WebSocket. */
export const NIP86_CONTENT_TYPE = 'application/nostr+json+rpc'

/**
 * The moderation methods: NIP-86's allow/ban lists, relay info, kinds and IPs (which act on the addressed
 * community, not the whole relay), and Apiary's timed ban and access policy. Answered by
 * infra/http/nip86/moderation.ts; params parsed in moderation-params.ts.
 */
export const MODERATION_METHODS = [
  'unbanpubkey',
  'allowpubkey',
  'unallowpubkey',
  'listallowedpubkeys',
  'banevent',
  'allowevent',
  'listbannedevents',
  'changerelayname',
  'changerelaydescription',
  'changerelayicon',
  'allowkind',
  'disallowkind',
  'listallowedkinds',
  'listdisallowedkinds',
  'blockip',
  'unblockip',
  'listblockedips',
  'timeoutpubkey',
  'setcommunitypolicy',
] as const
export type ModerationMethod = (typeof MODERATION_METHODS)[number]

/** The methods this relay answers, in the order `supportedmethods` lists them (docs/nip86-methods.md). */
export const NIP86_METHODS = [
  'supportedmethods',
  'banpubkey',
  'listbannedpubkeys',
  ...MODERATION_METHODS,
  'setagenttier',
  'listagents',
  // role domains (docs/agent-registry.md)
  'setagentrole',
  'setroledomain',
  'setchannelroles',
  'listroledomains',
  // NIP-43 invite codes (docs/nip43.md)
  'createinvite',
  'createcommunity',
  'archivecommunity',
  'listcommunities',
] as const
export type Nip86Method = (typeof NIP86_METHODS)[number]

/** Methods that act on the relay rather than on the addressed community: operators only. */
export const OPERATOR_METHODS: ReadonlySet<Nip86Method> = new Set(['createcommunity', 'archivecommunity', 'listcommunities'])

export interface Nip86Request {
  method: string
  params: unknown[]
}

/** NIP-86's response: `result`, plus `error` when the call failed. */
export interface Nip86Response {
  result: unknown
  error?: Reason
}

export interface BanPubkeyParams {
  pubkey: string
  reason: string | undefined
}

// Method names are short lowercase words; a longer one is not a method we could answer.
const MAX_METHOD_CHARS = 64
// A ban reason is a line for operators (and the NOTICE the banned socket gets); not a document.
export const maxBanReasonChars = 1_000

/** `{ method, params }` from the request body; `params` may be left out (it means `[]`). */
export function parseNip86Request(body: string): Result<Nip86Request> {
  let json: unknown
  try {
    json = JSON.parse(body)
  } catch {
    return invalid('body is not JSON')
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return invalid('body must be a JSON object')
  const { method, params } = json as Record<string, unknown>
  if (typeof method !== 'string' || method === '' || method.length > MAX_METHOD_CHARS) return invalid('method must be a short string')
  if (params !== undefined && !Array.isArray(params)) return invalid('params must be an array')
  return ok({ method, params: params ?? [] })
}

export const isNip86Method = (method: string): method is Nip86Method => (NIP86_METHODS as readonly string[]).includes(method)

/** `banpubkey` params: `["<32-byte-hex-public-key>", "<optional-reason>"]`. */
export function parseBanPubkeyParams(params: unknown[]): Result<BanPubkeyParams> {
  const [pubkey, why] = params
  if (!isHex64(pubkey)) return invalid('pubkey must be 64 lowercase hex characters')
  if (why !== undefined && typeof why !== 'string') return invalid('reason must be a string')
  if (why !== undefined && why.length > maxBanReasonChars) return invalid(`reason longer than ${maxBanReasonChars} characters`)
  return ok({ pubkey, reason: why === '' ? undefined : why })
}

export const toNip86Result = (result: unknown): Nip86Response => ({ result })

/** NIP-86 puts a failed call's message in `error`; `result` is null then. */
export const toNip86Error = (why: Reason): Nip86Response => ({ result: null, error: why })

export const invalid = (text: string): Result<never> => err(reason('invalid', text))
